# Convolution, pooling and batch normalisation (docs/layers_nn.md).
emutrain_test(test_conv2d SOURCES test_conv2d.cpp LIBS emutrain_engine LABELS layers)
emutrain_test(test_pool_norm SOURCES test_pool_norm.cpp LIBS emutrain_engine LABELS layers)
emutrain_test(test_stage_rows SOURCES test_stage_rows.cpp LIBS emutrain_engine LABELS layers)
