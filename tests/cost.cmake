# Hardware cost (train/cost_*.cpp, `emutrain cost`): counts against closed
# forms, the LeNet-5 step energy against a hand computation, the cost model's
# rules and errors.
emutrain_test(test_cost SOURCES test_cost.cpp LIBS emutrain_train LABELS cost)
