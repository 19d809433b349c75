// libFuzzer target: format specs (numerics/format_spec.h), e.g. "e4m3:sr:nosub".
// parse_format either returns a format or throws FormatError with a one-line
// message; a format it returns prints as a name that parses back to a format
// with the same name (the name is how recipes, logs and checkpoints record it).
#include <string>

#include "numerics/format_spec.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  const std::string spec(reinterpret_cast<const char*>(data), size);
  emu::Format f;
  try {
    f = emu::parse_format(spec);
  } catch (const emu::FormatError& e) {
    require_one_line(e, "bad format");
    return 0;
  }
  const std::string name = emu::format_name(f);
  try {
    const std::string again = emu::format_name(emu::parse_format(name));
    if (again != name) fail("format name does not round-trip", spec + " -> " + name + " -> " + again);
  } catch (const emu::FormatError& e) {
    fail("the name of a parsed format does not parse", spec + " -> " + name + ": " + e.what());
  }
  return 0;
}
