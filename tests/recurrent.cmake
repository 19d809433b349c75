# LSTM and GRU (docs/layers_recurrent.md).
emutrain_test(test_lstm SOURCES test_lstm.cpp ${PROJECT_SOURCE_DIR}/tools/calc_batch.cpp
              LIBS emutrain_engine LABELS layers recurrent)
emutrain_test(test_gru SOURCES test_gru.cpp ${PROJECT_SOURCE_DIR}/tools/calc_batch.cpp LIBS emutrain_engine
              LABELS layers recurrent)
emutrain_test(test_sequence_sum SOURCES test_sequence_sum.cpp LIBS emutrain_engine LABELS recurrent train)
