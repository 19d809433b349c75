# Approximate multipliers (docs/approx_mul.md): tables against their models,
# special values, the example plugin, layers and training under `mul: lut:...`.
emutrain_test(test_approx_mul SOURCES test_approx_mul.cpp LABELS numerics OPTIMIZED)

# The example plugin, built as a loadable module the layer test dlopen()s.
add_library(approx_mul_plugin MODULE ${PROJECT_SOURCE_DIR}/examples/approx_mul_plugin/mitchell_plugin.c)
set_target_properties(approx_mul_plugin PROPERTIES PREFIX "lib")

emutrain_test(test_approx_mul_layers
  SOURCES test_approx_mul_layers.cpp
  LIBS emutrain_train emutrain_calc LABELS layers)
add_dependencies(test_approx_mul_layers approx_mul_plugin)
target_compile_definitions(test_approx_mul_layers PRIVATE
  EMUTRAIN_APPROX_PLUGIN="$<TARGET_FILE:approx_mul_plugin>")

# The calculator with a multiplier spec, end to end: Mitchell's 1.5 x 1.5 = 2
# (binary32 0x40000000); the human form shows the table entry (carry 1, fraction 0).
add_test(NAME calc_cli_lut_batch
  COMMAND sh -c "printf 'mul lut:mitchell:e5m7 1.5 1.5\\ndot lut:mitchell:e5m7 fp32 fp32 1.5 1.5 1.25 1.25\\n' | \"$<TARGET_FILE:emutrain>\" calc --batch")
# dot: 2 + 1.5 = 3.5 = 0x40600000.
set_tests_properties(calc_cli_lut_batch PROPERTIES PASS_REGULAR_EXPRESSION "^0x40000000\n0x40600000\n$")
add_test(NAME calc_cli_lut_human COMMAND emutrain calc lut:mitchell:e5m7 mul 1.5 1.5)
set_tests_properties(calc_cli_lut_human PROPERTIES PASS_REGULAR_EXPRESSION
  "approx +2 +0x1p\\+1 +0x40000000 .*entry +\\[0x40\\]\\[0x40\\] = carry 1, fraction 0x0")
