# `emutrain data fetch` (data/fetch.h): downloads from a local HTTP server
# (tests/fetch/serve.py, Python's http.server on 127.0.0.1) with curl and wget,
# archives written by Python's tarfile/zipfile, checksums by coreutils' sha256sum.
emutrain_test(test_fetch SOURCES test_fetch.cpp LIBS emutrain_train LABELS data fetch)
target_compile_definitions(test_fetch PRIVATE EMUTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
emutrain_test(test_fetch_cli SOURCES test_fetch_cli.cpp LIBS emutrain_train LABELS data fetch)
target_compile_definitions(test_fetch_cli PRIVATE EMUTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(test_fetch_cli emutrain)
set_tests_properties(test_fetch_cli PROPERTIES ENVIRONMENT "EMUTRAIN_BIN=$<TARGET_FILE:emutrain>")
# On the real datasets in $EMUTRAIN_DATA_ROOT or ../shared/data: skipped ("SKIP: ") where absent.
emutrain_test(test_data_real_fetch SOURCES test_data_real_fetch.cpp LIBS emutrain_train LABELS data fetch)
target_compile_definitions(test_data_real_fetch PRIVATE EMUTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  EMUTRAIN_DEFAULT_DATA_ROOT="${PROJECT_SOURCE_DIR}/../shared/data")
add_dependencies(test_data_real_fetch emutrain)
set_tests_properties(test_data_real_fetch PROPERTIES ENVIRONMENT "EMUTRAIN_BIN=$<TARGET_FILE:emutrain>"
  SKIP_REGULAR_EXPRESSION "SKIP: ")
