# CPU-vs-GPU checks: built with the CUDA backend, Skipped at run time without a device.
if(EMUTRAIN_CUDA)
  emutrain_test(test_cuda_numerics SOURCES test_cuda_numerics.cpp LIBS emutrain_cuda LABELS gpu)
  emutrain_test(test_philox_cuda SOURCES test_philox_cuda.cpp LIBS emutrain_cuda LABELS gpu)
endif()

# The FMA check (tests/sass/check_fma.sh): the kernels of backends/cuda/ops as
# PTX, built with the project's flags (--fmad=false), contain no fused
# multiply-add except the listed ones; the self-test proves the check sees one.
# Where cuobjdump exists (a full CUDA toolkit) the SASS of libemutrain_cuda is
# checked as well.
if(EMUTRAIN_CUDA)
  add_library(emutrain_cuda_ptx OBJECT ${EMUTRAIN_CUDA_OP_SOURCES})
  set_target_properties(emutrain_cuda_ptx PROPERTIES CUDA_PTX_COMPILATION ON CUDA_ARCHITECTURES 90-virtual)
  target_link_libraries(emutrain_cuda_ptx PRIVATE emutrain_engine)
  add_test(NAME cuda_fma_check COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/sass/check_fma.sh
    ${CMAKE_CURRENT_SOURCE_DIR}/sass/fma_allowed.txt $<TARGET_OBJECTS:emutrain_cuda_ptx>)
  add_test(NAME cuda_fma_check_self_test COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/sass/check_fma.sh --self-test
    ${CMAKE_CUDA_COMPILER})
  find_program(EMUTRAIN_CUOBJDUMP cuobjdump HINTS ${CUDAToolkit_BIN_DIR})
  if(EMUTRAIN_CUOBJDUMP)
    add_test(NAME cuda_sass_fma_check COMMAND ${CMAKE_COMMAND} -E env CUOBJDUMP=${EMUTRAIN_CUOBJDUMP}
      bash ${CMAKE_CURRENT_SOURCE_DIR}/sass/check_fma.sh ${CMAKE_CURRENT_SOURCE_DIR}/sass/fma_allowed.txt
      $<TARGET_FILE:emutrain_cuda>)
  endif()
  set_tests_properties(cuda_fma_check cuda_fma_check_self_test PROPERTIES LABELS "cuda;sass")
endif()
