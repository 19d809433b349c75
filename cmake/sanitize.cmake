# Sanitizer builds (docs/sanitize.md). EMUTRAIN_SANITIZE is a -fsanitize= list:
#   address,undefined  every library, tool and test under ASan + UBSan (clang or GCC)
#   thread             ThreadSanitizer (build the `threads`-labelled tests only)
# Every report is fatal (-fno-sanitize-recover=all), so ctest sees it as a failure.
# nvcc cannot build sanitized host code, so a sanitizer build has no CUDA
# backend; the CUDA kernels still run through the host executor (emutrain_cuda_host),
# which is sanitized like everything else.
set(EMUTRAIN_SANITIZE "" CACHE STRING "Build with -fsanitize=<list> (e.g. address,undefined or thread); disables CUDA")
# EMUTRAIN_FUZZ builds the libFuzzer targets of tests/fuzz (clang only).
option(EMUTRAIN_FUZZ "Build the libFuzzer targets (tests/fuzz; needs clang)" OFF)

if(EMUTRAIN_SANITIZE)
  if(NOT EMUTRAIN_SANITIZE MATCHES "^(address|undefined|thread|leak)(,(address|undefined|thread|leak))*$")
    message(FATAL_ERROR "EMUTRAIN_SANITIZE='${EMUTRAIN_SANITIZE}': expected a comma-separated list of "
      "address, undefined, leak or thread (e.g. address,undefined)")
  endif()
  if(EMUTRAIN_SANITIZE MATCHES "thread" AND EMUTRAIN_SANITIZE MATCHES "address|leak")
    message(FATAL_ERROR "EMUTRAIN_SANITIZE='${EMUTRAIN_SANITIZE}': thread cannot be combined with address or leak")
  endif()
  set(EMUTRAIN_CUDA OFF)
  set(EMUTRAIN_SANITIZE_FLAGS -fsanitize=${EMUTRAIN_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer -g1)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND EMUTRAIN_SANITIZE MATCHES "undefined")
    # Clang's `undefined` includes float-cast-overflow (a float outside an
    # integer type's range converted to it), which the numerics must never do.
    # float-divide-by-zero stays off: IEEE division by zero is defined and used.
    list(APPEND EMUTRAIN_SANITIZE_FLAGS -fsanitize=float-cast-overflow)
    # Third-party header code only (tests/sanitize/ubsan_ignore.txt says which and why).
    list(APPEND EMUTRAIN_SANITIZE_FLAGS -fsanitize-ignorelist=${CMAKE_CURRENT_SOURCE_DIR}/tests/sanitize/ubsan_ignore.txt)
  endif()
  # -O1, the sanitizers' usual level (clang's AddressSanitizer documentation suggests
  # it for acceptable speed): a suite that checks memory and undefined behaviour,
  # not speed, need not pay for -O3's compile time.
  list(APPEND EMUTRAIN_SANITIZE_FLAGS -O1)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${EMUTRAIN_SANITIZE_FLAGS}>")
  add_link_options(-fsanitize=${EMUTRAIN_SANITIZE})
  message(STATUS "Sanitizers: ${EMUTRAIN_SANITIZE} (CUDA backend off)")
endif()

if(EMUTRAIN_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "EMUTRAIN_FUZZ=ON needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++-14 "
    "-DCMAKE_C_COMPILER=clang-14 (Debian packages clang-14 libclang-rt-14-dev)")
endif()

# The libraries whose code parses user input get libFuzzer's coverage
# instrumentation in a fuzz build, so the fuzzer can steer by it; the
# engine's arithmetic does not (it would only slow every test down).
function(emutrain_fuzz_instrument)
  if(EMUTRAIN_FUZZ)
    foreach(target IN LISTS ARGN)
      target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
    endforeach()
  endif()
endfunction()
