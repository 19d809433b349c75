# Precompiled headers (README.md, "Build time"). A typical translation unit of the
# engine preprocesses to about 80,000 lines, 59,000 of them the C++ standard
# library and 6,500 {fmt}; parsing them is about half of its compile time. Each
# library below parses them once, into a precompiled header that the compiler
# loads instead; the test executables share one per set of compile options.
#
# Only third-party headers go in: a project header in the precompiled set would
# be visible to every file of the target, hiding a missing #include. Each file
# still includes what it uses, so it compiles the same without them
# (-DEMUTRAIN_PCH=OFF). A compiler that cannot use the precompiled header (other
# options) parses the headers as usual: the result never depends on it.
option(EMUTRAIN_PCH "Precompile the standard library, {fmt} and Catch2 headers" ON)

# The standard headers that most files of the libraries include (counted over
# core/, backends/, layers/, config/, data/, models/, train/ and tests/).
set(EMUTRAIN_PCH_STD <algorithm> <cmath> <cstdint> <cstdlib> <cstring> <functional> <map> <memory>
  <stdexcept> <string> <utility> <vector>)

# emutrain_precompile(TARGET HEADER...): TARGET's C++ files see the standard set
# and HEADER... precompiled (CUDA files of a mixed target are left alone).
function(emutrain_precompile target)
  if(NOT EMUTRAIN_PCH)
    return()
  endif()
  set(headers)
  foreach(h IN LISTS EMUTRAIN_PCH_STD ARGN)
    list(APPEND headers "$<$<COMPILE_LANGUAGE:CXX>:${h}>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()
