# Layer normalisation, multi-head attention and Transformer blocks (docs/layers_attention.md).
emutrain_test(test_layernorm SOURCES test_layernorm.cpp LIBS emutrain_engine LABELS layers)
emutrain_test(test_attention SOURCES test_attention.cpp LIBS emutrain_engine emutrain_calc LABELS layers)
# The training runs, one CTest entry per model so that each stays well under 20 s.
add_executable(test_copy_task test_copy_task.cpp)
target_link_libraries(test_copy_task PRIVATE emutrain_numerics Catch2::Catch2WithMain emutrain_engine)
emutrain_quick_compile(test_copy_task)
add_test(NAME test_copy_task_encoder COMMAND test_copy_task "[encoder]")
add_test(NAME test_copy_task_decoder COMMAND test_copy_task "[decoder]")
set_tests_properties(test_copy_task_encoder test_copy_task_decoder PROPERTIES LABELS train)
# Learning runs (64 s together under ASan) of the blocks test_attention checks
# (encoder and decoder blocks, causal and padding masks, gradients) and
# test_models_transformer trains: sanitize_repeat (docs/sanitize.md).
emutrain_sanitize_repeat(test_copy_task test_copy_task_encoder test_copy_task_decoder)
