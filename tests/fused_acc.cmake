# Fused runs (docs/contract.md section 4.8, docs/fused_acc.md): exact runs of F
# products rounded once, against MPFR and the GMP reference; the policy key and
# calc's fused=F.
emutrain_test(test_fused_acc
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fused_acc.cpp
  LIBS emutrain_train emutrain_calc emutrain_reference LABELS reference)
