# mac_gemm (backends/cpu/gemm.cpp): every path against mac_reduce per output,
# and the fast rounding kernels (numerics/fast_round*.h) against round_value.
emutrain_test(test_gemm SOURCES test_gemm.cpp ${PROJECT_SOURCE_DIR}/backends/cpu/gemm.cpp
  ${PROJECT_SOURCE_DIR}/backends/cpu/split_gemm.cpp ${PROJECT_SOURCE_DIR}/core/split_stats.cpp LABELS gemm)
