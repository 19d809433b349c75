# Layout: every tracked C++/CUDA source follows .clang-format (tools/format.sh
# formats them; README.md, "Formatting"). Needs git and clang-format.
add_test(NAME clang_format COMMAND bash ${PROJECT_SOURCE_DIR}/tools/format.sh --check)
set_tests_properties(clang_format PROPERTIES LABELS "format" TIMEOUT 300)
