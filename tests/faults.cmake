# Fault injection: format-code bit flips, stuck-at bits, the recipe section, and
# the `emutrain faults` campaign (the real binary, path in $EMUTRAIN_BIN) (docs/faults.md).
emutrain_test(test_faults SOURCES test_faults.cpp LIBS emutrain_train LABELS faults)
add_dependencies(test_faults emutrain)
set_tests_properties(test_faults PROPERTIES ENVIRONMENT "EMUTRAIN_BIN=$<TARGET_FILE:emutrain>")
