# CPU-vs-GPU checks: built with the CUDA backend, Skipped at run time without a device.
if(EMUTRAIN_CUDA)
  emutrain_test(test_cuda_numerics SOURCES test_cuda_numerics.cpp LIBS emutrain_cuda LABELS gpu)
  emutrain_test(test_philox_cuda SOURCES test_philox_cuda.cpp LIBS emutrain_cuda LABELS gpu)
endif()

# The PTX checks read the PTX of the build's one nvcc compile (issue 31): every
# kernel file of emutrain_cuda is compiled for 90-virtual (with 90-real where
# asked), so its object carries its PTX in the fatbinary; tests/sass/extract_ptx.py writes it
# out of libemutrain_cuda.a (also when ccache served the objects: the PTX is in
# the cached object). The entries are stored uncompressed so that a script can
# read them (a few MiB more in the library).
#
# The FMA check (tests/sass/check_fma.sh): the kernels, built with the
# project's flags (--fmad=false), contain no fused multiply-add except the
# listed ones, and no floating-point mul/add without a rounding modifier (which
# ptxas or the driver could fuse); the self-test proves the check sees both.
# Where cuobjdump exists (a full CUDA toolkit) the SASS is checked as well: that
# of libemutrain_cuda when the build holds machine code, else (PTX only, the
# default without a GPU) that of the PTX assembled for sm_90 as nvcc would, which
# costs ptxas's minutes and so runs in the long tier.
#
# The kernel budget check (tests/sass/kernel_budgets.py, docs/cuda_kernels.md):
# ptxas -v for sm_90, occupancy by cuda_occupancy.h, and PTX instructions per
# MAC of the marked k loops against tests/sass/kernel_budgets.txt; its
# self-test plants regressions that must fail. `cmake --build build --target
# kernel_budgets_doc` rewrites the table in docs/cuda_kernels.md.
if(EMUTRAIN_CUDA)
  target_compile_options(emutrain_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--compress-mode=none>)
  find_program(EMUTRAIN_PYTHON3 python3 REQUIRED)
  find_program(EMUTRAIN_PTXAS ptxas HINTS ${CUDAToolkit_BIN_DIR} REQUIRED)
  add_executable(sass_occupancy sass/occupancy.cpp)
  target_include_directories(sass_occupancy PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  set(EMUTRAIN_PTX_DIR ${CMAKE_BINARY_DIR}/kernel_ptx)
  set(sass ${CMAKE_CURRENT_SOURCE_DIR}/sass)
  add_test(NAME cuda_ptx_extract COMMAND ${EMUTRAIN_PYTHON3} ${sass}/extract_ptx.py ${EMUTRAIN_PTX_DIR}
    $<TARGET_FILE:emutrain_cuda>)
  set_tests_properties(cuda_ptx_extract PROPERTIES FIXTURES_SETUP cuda_ptx)
  add_test(NAME cuda_fma_check COMMAND bash ${sass}/check_fma.sh ${sass}/fma_allowed.txt ${EMUTRAIN_PTX_DIR})
  add_test(NAME cuda_fma_check_self_test COMMAND bash ${sass}/check_fma.sh --self-test ${CMAKE_CUDA_COMPILER})
  set(budget_args --ptx ${EMUTRAIN_PTX_DIR} --budgets ${sass}/kernel_budgets.txt --ptxas ${EMUTRAIN_PTXAS}
    --occupancy $<TARGET_FILE:sass_occupancy>)
  # One test per group of kernel files, so that ctest -j runs them side by side; conv.cu's ten
  # budgeted kernels (63 s of ptxas on the 2-core build machine) in two tests, the forward
  # kernels and the gradients'.
  set(budget_tests)
  foreach(group conv_fwd=conv:conv-fwd conv_grad=conv:conv-gi,conv-gw gemm=gemm
      attention_products=attention_products,sparse batchnorm=batchnorm,layernorm,elementwise)
    string(REGEX MATCH "^([^=]*)=([^:]*):?(.*)$" unused ${group})
    set(tag ${CMAKE_MATCH_1})
    set(select --files ${CMAKE_MATCH_2})
    if(CMAKE_MATCH_3)
      list(APPEND select --kernels ${CMAKE_MATCH_3})
    endif()
    add_test(NAME cuda_kernel_budgets_${tag} COMMAND ${EMUTRAIN_PYTHON3} ${sass}/kernel_budgets.py ${budget_args}
      ${select})
    list(APPEND budget_tests cuda_kernel_budgets_${tag})
  endforeach()
  add_test(NAME cuda_kernel_budgets_self_test COMMAND ${EMUTRAIN_PYTHON3} ${sass}/kernel_budgets.py --self-test
    --nvcc ${CMAKE_CUDA_COMPILER} ${budget_args})
  set_tests_properties(cuda_fma_check ${budget_tests} cuda_kernel_budgets_self_test PROPERTIES
    FIXTURES_REQUIRED cuda_ptx)
  # The long tier (tools/long_tests.sh, which CI runs): ptxas over 33 kernels takes 100 s of a
  # 2-core machine and its self-test 50 s; a kernel change runs them by `ctest -R kernel_budgets`.
  set_tests_properties(${budget_tests} cuda_kernel_budgets_self_test PROPERTIES LABELS "cuda;sass;long"
    TIMEOUT 600)
  add_custom_target(kernel_budgets_doc
    COMMAND ${EMUTRAIN_PYTHON3} ${sass}/extract_ptx.py ${EMUTRAIN_PTX_DIR} $<TARGET_FILE:emutrain_cuda>
    COMMAND ${EMUTRAIN_PYTHON3} ${sass}/kernel_budgets.py ${budget_args}
      --doc ${CMAKE_SOURCE_DIR}/docs/cuda_kernels.md --no-check
    DEPENDS emutrain_cuda sass_occupancy VERBATIM
    COMMENT "Kernel budget table of docs/cuda_kernels.md")
  find_program(EMUTRAIN_CUOBJDUMP cuobjdump HINTS ${CUDAToolkit_BIN_DIR})
  set(emutrain_has_sass OFF)
  foreach(arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
    if(NOT arch MATCHES "-virtual$")
      set(emutrain_has_sass ON)
    endif()
  endforeach()
  if(EMUTRAIN_CUOBJDUMP AND emutrain_has_sass)
    add_test(NAME cuda_sass_fma_check COMMAND ${CMAKE_COMMAND} -E env CUOBJDUMP=${EMUTRAIN_CUOBJDUMP}
      bash ${sass}/check_fma.sh ${sass}/fma_allowed.txt $<TARGET_FILE:emutrain_cuda>)
  elseif(EMUTRAIN_CUOBJDUMP)
    add_test(NAME cuda_sass_fma_check COMMAND ${CMAKE_COMMAND} -E env CUOBJDUMP=${EMUTRAIN_CUOBJDUMP}
      bash ${sass}/check_fma.sh --assemble ${EMUTRAIN_PTXAS} ${sass}/fma_allowed.txt ${EMUTRAIN_PTX_DIR})
    set_tests_properties(cuda_sass_fma_check PROPERTIES LABELS "cuda;sass;long" FIXTURES_REQUIRED cuda_ptx
      TIMEOUT 900)
  endif()
  set_tests_properties(cuda_ptx_extract cuda_fma_check cuda_fma_check_self_test PROPERTIES LABELS "cuda;sass")
endif()
