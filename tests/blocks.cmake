# Block formats: bfp, OCP MX, nvfp4, AdaptivFloat (docs/block_formats.md).
emutrain_test(test_block_format SOURCES test_block_format.cpp LABELS numerics)
emutrain_test(test_block_layers SOURCES test_block_layers.cpp LIBS emutrain_engine LABELS layers)
