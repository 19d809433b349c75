# Split multiplication (docs/contract.md section 5.6, docs/split_mul.md): the
# schemes against the reference, calc --batch lines, APE's precision bounds,
# the exact int16 products, policies and the CPU GEMM paths.
emutrain_test(test_split_mul
  SOURCES test_split_mul.cpp
  LIBS emutrain_train emutrain_calc emutrain_reference LABELS reference)

# The real binary, answers worked out by hand:
#   (1 + 2^-23)^2 under fp32b: Hi = 1, Mi = 2^-23, Lo = 0; adds 1, 2^-23, 2^-23,
#   0, 2^-46, 0 into fp32 -> 1 + 2^-22 = 0x3f800002.
#   dot under fp32t: 1 x 1 + 2 x 2 = 5 = 0x40a00000 (parts exact, Lo = 0).
add_test(NAME calc_cli_split_batch
  COMMAND sh -c "printf 'mul split:fp32b 0x3f800001 0x3f800001\\ndot split:fp32t fp32 fp32 1 1 2 2\\n' | \"$<TARGET_FILE:emutrain>\" calc --batch")
set_tests_properties(calc_cli_split_batch PROPERTIES PASS_REGULAR_EXPRESSION "^0x3f800002\n0x40a00000\n$")

# compare-emulation takes the split schemes for matmul (docs/split_mul.md has the 256^3 table)
# and refuses them for conv3x3.
add_test(NAME compare_emulation_split
  COMMAND emutrain compare-emulation --op matmul --size 8,8,16 --format split:fp32t,split:int16)
set_tests_properties(compare_emulation_split PROPERTIES PASS_REGULAR_EXPRESSION
  "split:fp32t op-level \\(mul split:fp32t, acc fp32\\).*split:int16 op-level \\(mul split:int16, acc fp32\\)")
add_test(NAME compare_emulation_split_conv
  COMMAND emutrain compare-emulation --op conv3x3 --size 1,2,4,4,2 --format split:fp32b)
set_tests_properties(compare_emulation_split_conv PROPERTIES WILL_FAIL TRUE)

# The calculator for people: 0.1 x 3 under fp32b. 0.1 (binary32 0x3dcccccd) splits into
# Hi 0.10009765625, Mi -9.7751617431640625e-05, Lo 9.6857547760009765625e-08 (their sum is
# 0.1 exactly); 3 is Hi alone. The six additions into fp32 give 0x3e99999a, the binary32
# nearest the exact 0.300000004470348358154296875 (same as a correctly rounded product here).
add_test(NAME calc_cli_split_human COMMAND emutrain calc split:fp32b mul 0.1 3)
set_tests_properties(calc_cli_split_human PROPERTIES PASS_REGULAR_EXPRESSION
  "hi 0\\.10009765625  mi -9\\.7751617431640625e-05  lo 9\\.6857547760009765625e-08.*split +0\\.300000011920928955078125 +0x1\\.333334p-2")
