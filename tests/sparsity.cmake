# N:M sparsity: the nm_mask / apply_mask ops, masked layer reads, statistics (docs/sparsity.md).
emutrain_test(test_sparsity SOURCES test_sparsity.cpp LIBS emutrain_engine LABELS sparsity)
