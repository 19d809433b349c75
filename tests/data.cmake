# Dataset loaders, batching and the recipe-facing dataset factory (data/).
foreach(area cifar image_folder mnist ucr cora fra loader registry)
  emutrain_test(test_data_${area} SOURCES test_data_${area}.cpp LIBS emutrain_train LABELS data)
endforeach()
# On the real datasets in $EMUTRAIN_DATA_ROOT or ../shared/data; each prints
# "SKIP: ... not found" and counts as skipped when its data is absent.
foreach(real cora mnist fra)
  emutrain_test(test_data_real_${real} SOURCES test_data_real_${real}.cpp LIBS emutrain_train LABELS data)
  target_compile_definitions(test_data_real_${real} PRIVATE EMUTRAIN_DEFAULT_DATA_ROOT="${PROJECT_SOURCE_DIR}/../shared/data")
  set_tests_properties(test_data_real_${real} PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: ")
endforeach()
# fra.txt's 167,130 pairs read four times (24 s under ASan): the loader's code runs
# under the sanitizers in test_data_fra and fuzz_fra's corpus; the real file adds
# only size. Label sanitize_repeat (docs/sanitize.md).
emutrain_sanitize_repeat(test_data_real_fra test_data_real_fra)
