# The binary32 non-linear functions of numerics/functions.h against MPFR: max ulp
# error within the bounds of docs/functions.md, IEEE special values, pinned output
# bits. About 30 s on one core; "[.exhaustive]" (all 2^32 inputs) is run by hand.
emutrain_test(test_functions SOURCES test_functions.cpp LIBS mpfr gmp LABELS functions OPTIMIZED)

# fn_exp eight lanes at a time (numerics/functions_lanes.h) against fn_exp: every
# input of the regions where a branch of fn_exp changes, the special values and a
# sweep; "[.exhaustive]" (all 2^32 inputs, about 2 minutes on two cores) is run by hand.
emutrain_test(test_functions_lanes SOURCES test_functions_lanes.cpp LABELS functions OPTIMIZED)
