# Element-wise layers, softmax, dropout, shape ops, Sequential (layers/activation,
# softmax, dropout, shape_ops, sequential) and the losses (layers/loss), with
# their CPU ops (backends/cpu/{elementwise,softmax,random,loss}_ops.cpp).
# docs/layers_elementwise.md says what each test checks.
emutrain_test(test_elementwise_layers SOURCES test_elementwise_layers.cpp LIBS emutrain_engine LABELS layers)
emutrain_test(test_losses SOURCES test_losses.cpp LIBS emutrain_engine LABELS layers)
