# mac_gemm (backends/cpu/gemm.cpp): every path against mac_reduce per output,
# and the fast rounding kernels (numerics/fast_round*.h) against round_value.
emutrain_test(test_gemm SOURCES test_gemm.cpp LIBS emutrain_engine LABELS gemm OPTIMIZED)
