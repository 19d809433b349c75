# LSTM and GRU (docs/layers_recurrent.md).
emutrain_test(test_lstm SOURCES test_lstm.cpp LIBS emutrain_engine emutrain_calc LABELS layers recurrent)
emutrain_test(test_gru SOURCES test_gru.cpp LIBS emutrain_engine emutrain_calc LABELS layers recurrent)
emutrain_test(test_sequence_sum SOURCES test_sequence_sum.cpp LIBS emutrain_engine LABELS recurrent train)
