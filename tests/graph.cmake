# Sparse matrices and graph layers: core/csr, the spmm ops (backends/cpu/sparse_ops.cpp),
# sparse_matmul / sparse_linear and GCNConv (layers/). docs/layers_graph.md says what each test checks.
emutrain_test(test_csr SOURCES test_csr.cpp LIBS emutrain_engine LABELS graph)
emutrain_test(test_gcn SOURCES test_gcn.cpp LIBS emutrain_engine emutrain_calc LABELS graph)
# A learning run (47 s under ASan): its steps run the GCN's ops over the same
# buffers as test_models_gcn, test_gcn and test_csr, so the sanitizer build
# leaves it out (sanitize_repeat, docs/sanitize.md).
emutrain_test(test_planted_partition SOURCES test_planted_partition.cpp LIBS emutrain_engine
  LABELS graph train sanitize_repeat)
