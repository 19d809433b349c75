# Sequence layers: Embedding, index_select / gather_rows, Conv1d, temporal pools (layers/{embedding,
# index_select,conv1d,temporal_pool}) with their CPU ops (backends/cpu/sequence_ops.cpp; Conv1d runs the
# Conv2d ops of backends/cpu/conv_ops.cpp).
# docs/layers_sequence.md says what each computes.
emutrain_test(test_sequence_layers SOURCES test_sequence_layers.cpp LIBS emutrain_engine LABELS layers)
emutrain_test(test_sequence_conv1d SOURCES test_sequence_conv1d.cpp LIBS emutrain_engine emutrain_calc
              LABELS layers)
emutrain_test(test_sequence_pool SOURCES test_sequence_pool.cpp LIBS emutrain_engine LABELS layers)
