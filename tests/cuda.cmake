# CPU-vs-GPU checks: built with the CUDA backend, Skipped at run time without a device.
if(EMUTRAIN_CUDA)
  emutrain_test(test_cuda_numerics SOURCES test_cuda_numerics.cpp LIBS emutrain_cuda LABELS gpu)
  emutrain_test(test_philox_cuda SOURCES test_philox_cuda.cpp LIBS emutrain_cuda LABELS gpu)
endif()
