# The GPU session kit (docs/gpu.md): the bundle packs the test build's binary and
# is self-contained (gpu_bundle), and tools/gpu_check.sh runs from it on
# cuda-host with tiny sizes (gpu_check_quick), so neither rots between GPU loans.
# Not in sanitizer builds: a bundle is made of the release build.
if(EMUTRAIN_SANITIZE)
  return()
endif()
set(EMUTRAIN_GPU_BUNDLE_DIR ${CMAKE_BINARY_DIR}/gpu_bundle)
add_test(NAME gpu_bundle COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu_kit/check_bundle.sh
  ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR} ${EMUTRAIN_GPU_BUNDLE_DIR})
set_tests_properties(gpu_bundle PROPERTIES LABELS "gpu_kit;long" TIMEOUT 600 FIXTURES_SETUP gpu_bundle_archive)
add_test(NAME gpu_check_quick COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu_kit/check_quick.sh
  ${PROJECT_SOURCE_DIR} ${EMUTRAIN_GPU_BUNDLE_DIR}/emutrain-gpu.tar.xz ${CMAKE_BINARY_DIR}/gpu_check_quick)
set_tests_properties(gpu_check_quick PROPERTIES LABELS "gpu_kit;long" TIMEOUT 900 FIXTURES_REQUIRED gpu_bundle_archive)
