# The config module (config/): strict scalar readers, schema checks and typed
# reads, with the messages the recipe and data tests rely on.
emutrain_test(test_config SOURCES test_config.cpp LIBS emutrain_train LABELS train)
