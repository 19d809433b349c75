# The independent reference (tests/reference/, MPFR + GMP rationals, no code
# shared with numerics/) and the tests that compare numerics/ against it bit
# for bit.
find_path(EMUTRAIN_MPFR_INCLUDE mpfr.h REQUIRED)
find_path(EMUTRAIN_GMP_INCLUDE gmp.h REQUIRED)
find_library(EMUTRAIN_MPFR_LIB mpfr REQUIRED)
find_library(EMUTRAIN_GMP_LIB gmp REQUIRED)

add_library(emutrain_reference STATIC
  ${CMAKE_CURRENT_LIST_DIR}/reference/rational.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference/ref_round.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference/ref_ieee.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference/ref_posit.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference/ref_fixed.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference/ref_arith.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference/ref_dot.cpp
)
target_include_directories(emutrain_reference PUBLIC ${PROJECT_SOURCE_DIR} ${EMUTRAIN_MPFR_INCLUDE}
                                                     ${EMUTRAIN_GMP_INCLUDE})
target_link_libraries(emutrain_reference PUBLIC ${EMUTRAIN_MPFR_LIB} ${EMUTRAIN_GMP_LIB} emutrain_numerics)

# Exhaustive: every code of every format of <= 8 bits; every pair of 8-bit codes.
emutrain_test(test_codes_exhaustive SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_codes_exhaustive.cpp
              LIBS emutrain_reference LABELS reference OPTIMIZED)
emutrain_test(test_pairs_8bit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pairs_8bit.cpp
              LIBS emutrain_reference LABELS reference OPTIMIZED)
# Random: 10^6 cases per operation on 16-bit formats, plus wide (accumulator) formats.
emutrain_test(test_random_16bit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_random_16bit.cpp
              LIBS emutrain_reference LABELS reference OPTIMIZED)
# The reduction of docs/contract.md section 4.
emutrain_test(test_mac SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mac.cpp
              LIBS emutrain_reference LABELS reference OPTIMIZED)
# Stochastic rounding: exact decisions and Philox statistics.
emutrain_test(test_stochastic SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_stochastic.cpp
              LIBS emutrain_reference LABELS reference OPTIMIZED)
