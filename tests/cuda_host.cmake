# The CUDA backend without a GPU: its kernels run on the CPU through the host
# executor (device cuda-host) and must give the CPU reference's bits.
emutrain_test(test_cuda_host_training SOURCES test_cuda_host_training.cpp LIBS emutrain_train emutrain_devices
  LABELS cuda_host train)

# One message per bad call on both backends: every op family's checks live in
# core/<family>_checks.h and both backends call them (tests/test_op_checks.cpp).
emutrain_test(test_op_checks SOURCES test_op_checks.cpp LIBS emutrain_devices LABELS cuda_host)

# The five recipes (and the GCN's and CRNN's variants) on cuda-host against the
# CPU, step by step, with resumes across backends (tests/test_cuda_host_recipes.cpp).
# One ctest per model (ResNet-18, the slowest, one per policy) so that ctest -j
# runs them side by side. They are the long
# tier (label `long`: tools/long_tests.sh and CI run them; README.md): the kernels
# they run are each checked op by op by validate_cuda_host_* in the default tier.
add_executable(test_cuda_host_recipes test_cuda_host_recipes.cpp)
target_link_libraries(test_cuda_host_recipes PRIVATE emutrain_numerics Catch2::Catch2WithMain emutrain_train
  emutrain_devices)
target_compile_definitions(test_cuda_host_recipes PRIVATE EMUTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
emutrain_quick_compile(test_cuda_host_recipes)
foreach(model lenet5 resnet18_fp32 resnet18_e6m6 resnet18_sr transformer crnn gcn)
  add_test(NAME cuda_host_recipe_${model} COMMAND test_cuda_host_recipes "[${model}]")
  set_tests_properties(cuda_host_recipe_${model} PROPERTIES LABELS "cuda_host;train;recipes;long" TIMEOUT 1800)
endforeach()
# Under the sanitizers the Transformer and GCN recipes run (the trainer's device
# plumbing: uploads, steps, checkpoints resumed across backends); the kernels of
# the others (ResNet-18's convolutions of every stride and padding it uses, batch
# norm and pooling; LeNet-5's convolutions and pooling; the CRNN's GRU, LSTM,
# embedding and sequence ops) run there op by op in validate_cuda_host_*, and
# every model family's device plumbing (host-made indices, masks and targets,
# transfers) in test_device_engine on its mirror device. They are the
# slowest there (ResNet-18 147 s, the CRNN 42 s, LeNet-5 38 s): label
# `sanitize_repeat` (docs/sanitize.md).
set_property(TEST cuda_host_recipe_resnet18_fp32 cuda_host_recipe_resnet18_e6m6 cuda_host_recipe_resnet18_sr
  cuda_host_recipe_crnn cuda_host_recipe_lenet5 APPEND PROPERTY LABELS sanitize_repeat)
