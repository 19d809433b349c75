# Recipes, checkpoints, the trainer and the `emutrain train/eval/info` commands.
emutrain_test(test_recipe SOURCES test_recipe.cpp LIBS emutrain_train LABELS train)
target_compile_definitions(test_recipe PRIVATE EMUTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
emutrain_test(test_checkpoint SOURCES test_checkpoint.cpp LIBS emutrain_train LABELS train)
emutrain_test(test_trainer SOURCES test_trainer.cpp LIBS emutrain_train LABELS train)
# The real binary: one-line errors, kill -9 and --resume, info and eval.
emutrain_test(test_cli_train SOURCES test_cli_train.cpp LIBS emutrain_train LABELS train)
add_dependencies(test_cli_train emutrain)
set_tests_properties(test_cli_train PROPERTIES ENVIRONMENT "EMUTRAIN_BIN=$<TARGET_FILE:emutrain>")
# The one CSV writer/reader, atomic file write and UTF-8 encoder.
emutrain_test(test_csv_atomic SOURCES test_csv_atomic.cpp LIBS emutrain_train LABELS train)
