emutrain_test(test_philox SOURCES test_philox.cpp)
if(EMUTRAIN_CUDA)
  # Needs only nvcc and cuRAND's headers, no GPU: runs everywhere nvcc is.
  emutrain_test(test_curand_on_host SOURCES test_curand_on_host.cpp curand_on_host.cu LIBS CUDA::cudart)
  target_include_directories(test_curand_on_host PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
endif()
