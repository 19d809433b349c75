# The training engine: tensors, autograd, modules, policies, Linear, optimizers, training.
emutrain_test(test_linear SOURCES test_linear.cpp LIBS emutrain_engine emutrain_calc)
emutrain_test(test_core SOURCES test_core.cpp LIBS emutrain_engine)
emutrain_test(test_optim SOURCES test_optim.cpp LIBS emutrain_engine)
emutrain_test(test_train SOURCES test_train.cpp LIBS emutrain_engine LABELS train)
