# Library use: `cmake --install` of this build, then examples/embed configured
# with find_package(emutrain) against that prefix, built and run (it trains a
# few steps and fails unless the loss fell).
add_test(NAME test_embed_package
  COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DCXX_COMPILER=${CMAKE_CXX_COMPILER} -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/embed_package -P ${PROJECT_SOURCE_DIR}/cmake/embed_check.cmake)
set_tests_properties(test_embed_package PROPERTIES LABELS package TIMEOUT 600)
