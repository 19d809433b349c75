// libFuzzer target: the JSON reader of safetensors headers and metric lines
// (train/json.h). parse_json either returns a value or throws JsonError with a
// one-line message; the strings it returns are valid UTF-8 that json_quote
// writes back as a literal parse_json reads as the same string.
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "train/json.h"

namespace {

void check_strings(const emu::train::Json& v, int depth) {
  using emu::train::Json;
  if (depth > 100000) emu::fuzz::fail("json", "deeper than the input is long");
  if (v.kind == Json::Kind::String) {
    Json back = emu::train::parse_json(emu::train::json_quote(v.text));
    if (back.kind != Json::Kind::String || back.text != v.text)
      emu::fuzz::fail("json_quote round trip", v.text);
  }
  for (const Json& item : v.items) check_strings(item, depth + 1);
  for (const auto& [key, member] : v.members) check_strings(member, depth + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  emu::train::Json v;
  try {
    v = emu::train::parse_json(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const emu::train::JsonError& e) {
    require_one_line(e);
    return 0;
  }
  try {
    check_strings(v, 0);
  } catch (const emu::train::JsonError& e) {
    fail("a string parse_json returned does not read back", e.what());
  }
  return 0;
}
