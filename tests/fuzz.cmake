# libFuzzer targets (tests/fuzz, docs/sanitize.md), one per kind of input a user
# hands emutrain: built with -DEMUTRAIN_FUZZ=ON (clang, normally together with
# -DEMUTRAIN_SANITIZE=address,undefined). Each runs in ctest from its seed corpus
# for a few seconds (label `fuzz`); new inputs it finds go to the build folder,
# never into the repository's corpus.
if(EMUTRAIN_FUZZ)
  set(EMUTRAIN_FUZZ_TARGETS format_spec calc_line recipe sweep safetensors json mnist cifar10 ucr cora fra
      block_decode)
  set(EMUTRAIN_FUZZ_SECONDS 4 CACHE STRING "Seconds each fuzz target runs in ctest")
  add_library(emutrain_fuzz_support STATIC fuzz/fuzz_support.cpp)
  target_link_libraries(emutrain_fuzz_support PUBLIC emutrain_numerics ZLIB::ZLIB)
  foreach(t IN LISTS EMUTRAIN_FUZZ_TARGETS)
    add_executable(fuzz_${t} fuzz/fuzz_${t}.cpp)
    target_compile_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(fuzz_${t} PRIVATE emutrain_fuzz_support emutrain_train emutrain_calc)
    set(dict ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/dict/${t}.dict)
    if(NOT EXISTS ${dict})
      set(dict "")
    endif()
    add_test(NAME fuzz_${t} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_corpus.sh $<TARGET_FILE:fuzz_${t}>
      ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${t} ${CMAKE_CURRENT_BINARY_DIR}/fuzz_work/${t} ${EMUTRAIN_FUZZ_SECONDS}
      ${dict})
    set_tests_properties(fuzz_${t} PROPERTIES LABELS fuzz TIMEOUT 300)
  endforeach()
endif()
