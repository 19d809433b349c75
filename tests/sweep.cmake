# Studies: sweep files, the sweep runner and results tables, the format search
# (train/sweep*.cpp, train/format_search.cpp; `emutrain sweep` and `emutrain search`).
emutrain_test(test_sweep SOURCES test_sweep.cpp LIBS emutrain_train LABELS sweep)
target_compile_definitions(test_sweep PRIVATE EMUTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
emutrain_test(test_search SOURCES test_search.cpp LIBS emutrain_train LABELS sweep)
# The real binary: a tiny sweep, SIGKILL and restart, a diverged run, search's cache.
emutrain_test(test_sweep_cli SOURCES test_sweep_cli.cpp LIBS emutrain_train LABELS sweep)
add_dependencies(test_sweep_cli emutrain)
set_tests_properties(test_sweep_cli PROPERTIES ENVIRONMENT "EMUTRAIN_BIN=$<TARGET_FILE:emutrain>")
