# Piecewise-linear function approximations (numerics/pwl.h, docs/functions.md
# "Piecewise-linear approximations"): the pieces, their evaluation, saturation,
# continuity and the policy key; then the layers that use them (activations,
# softmax's exp, LSTM/GRU gates), their backward and a small training run.
emutrain_test(test_pwl SOURCES test_pwl.cpp LIBS emutrain_engine LABELS numerics pwl)
emutrain_test(test_pwl_layers SOURCES test_pwl_layers.cpp LIBS emutrain_engine LABELS layers pwl)
emutrain_test(test_pwl_recipe SOURCES test_pwl_recipe.cpp LIBS emutrain_train LABELS train pwl)
target_compile_definitions(test_pwl_recipe PRIVATE EMUTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
