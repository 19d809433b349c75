# The CUDA backend without a GPU: its kernels run on the CPU through the host
# executor (device cuda-host) and must give the CPU reference's bits.
emutrain_test(test_cuda_host_training SOURCES test_cuda_host_training.cpp LIBS emutrain_train emutrain_devices
  LABELS cuda_host train)
