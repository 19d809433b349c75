# The model families of the recipes (models/): each builds from a recipe-like
# section and trains forward and backward; smoke runs go through the real
# loaders and the trainer on files the tests write (UCR, fra.txt, Cora LINQS).
foreach(model transformer crnn gcn)
  emutrain_test(test_models_${model} SOURCES test_models_${model}.cpp LIBS emutrain_train LABELS models train)
  target_compile_definitions(test_models_${model} PRIVATE EMUTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endforeach()
# Two training steps of every model under five policies on 1-3 threads against
# digests recorded before the issue-14 consolidation: bits stay as they were.
emutrain_test(test_pinned_training SOURCES test_pinned_training.cpp LIBS emutrain_train LABELS models train pinned)
