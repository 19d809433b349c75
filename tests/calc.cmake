# emutrain calc: the format spec parser/printer and format properties, the
# batch calculator in-process (against the reference), and the real binary.
emutrain_test(test_format_spec SOURCES test_format_spec.cpp)
emutrain_test(test_calc_batch
  SOURCES test_calc_batch.cpp
  LIBS emutrain_calc emutrain_reference LABELS reference)

# The real binary, end to end, answer worked out by hand:
#   0.1 -> binary32 0x3dcccccd = 1.6000000238 * 2^-4; fp8_e4m3 (e4m3fn) keeps 3
#        fraction bits: neighbours 1.5 and 1.625 * 2^-4, nearer 1.625 -> 0.1015625
#   0.3 -> binary32 0x3e99999a = 1.2000000477 * 2^-2; neighbours 1.125 and 1.25
#        * 2^-2, nearer 1.25 -> 0.3125
#   exact product 0.1015625 * 0.3125 = 0.03173828125 = 1.015625 * 2^-5;
#        neighbours 1.0 and 1.125 * 2^-5, nearer 1.0 -> 2^-5 = 0.03125
#   binary32 bits of 2^-5: exponent 127 - 5 = 122 = 0x7a -> 0x3d000000
add_test(NAME calc_cli_batch_mul
  COMMAND sh -c "printf 'mul fp8_e4m3 0.1 0.3\\n' | \"$<TARGET_FILE:emutrain>\" calc --batch")
set_tests_properties(calc_cli_batch_mul PROPERTIES PASS_REGULAR_EXPRESSION "^0x3d000000\n$")

# The same product for people: rounded value with its code (0 0010 000 = 0x10)
# and the error (0.03125 - 0.03173828125) / 2^-8 = -0.125 ulp.
add_test(NAME calc_cli_human_mul COMMAND emutrain calc fp8_e4m3 mul 0.1 0.3)
set_tests_properties(calc_cli_human_mul PROPERTIES PASS_REGULAR_EXPRESSION
  "rounded +0\\.03125 +0x1p-5 +0x3d000000 +0x10 +0 0010 000\n +error +-0\\.125 ulp")

# e5m2 info: max (2 - 2^-2) * 2^15, min normal 2^-14, min subnormal 2^-16, 2^8 codes.
add_test(NAME calc_cli_info COMMAND emutrain calc e5m2 info)
set_tests_properties(calc_cli_info PROPERTIES PASS_REGULAR_EXPRESSION
  "max finite +57344 .*min normal +6\\.103515625e-05 .*min subnormal +1\\.52587890625e-05 .*epsilon +0\\.25 .*256 = 2\\^8: 248 finite \\(2 zeros\\), 6 NaN, 2 Inf")

# Garbage on stdin: one answer per line, exit code 1 (tests/calc_garbage.sh).
add_test(NAME calc_cli_garbage COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/calc_garbage.sh $<TARGET_FILE:emutrain>)
