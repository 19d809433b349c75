# LSTM and GRU (docs/layers_recurrent.md).
emutrain_test(test_lstm SOURCES test_lstm.cpp LIBS emutrain_engine emutrain_calc LABELS layers recurrent)
emutrain_test(test_gru SOURCES test_gru.cpp LIBS emutrain_engine emutrain_calc LABELS layers recurrent)
# A learning run (29 s under ASan) of the layers test_lstm and test_gru check
# op by op, on every path: sanitize_repeat (docs/sanitize.md).
emutrain_test(test_sequence_sum SOURCES test_sequence_sum.cpp LIBS emutrain_engine
  LABELS recurrent train sanitize_repeat)
