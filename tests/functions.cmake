# The binary32 non-linear functions of numerics/functions.h against MPFR: max ulp
# error within the bounds of docs/functions.md, IEEE special values, pinned output
# bits. About 30 s on one core; "[.exhaustive]" (all 2^32 inputs) is run by hand.
emutrain_test(test_functions SOURCES test_functions.cpp LIBS mpfr gmp LABELS functions OPTIMIZED)
