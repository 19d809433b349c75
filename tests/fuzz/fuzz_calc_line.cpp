// libFuzzer target: one `emutrain calc --batch` line (calc/batch.h). Whatever the
// line holds, the answer is exactly one line: a result, or "error: <reason>"
// when the call says it failed; nothing is thrown.
#include <string>
#include <string_view>

#include "calc/batch.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  std::string_view line(reinterpret_cast<const char*>(data), size);
  line = line.substr(0, line.find('\n'));  // the protocol hands over one line at a time
  std::string out;
  const bool ok = emu::calc::calc_batch_line(line, 7, 1234, &out);
  if (out.empty()) fail("empty answer", line);
  if (out.find('\n') != std::string::npos) fail("answer of more than one line", out);
  if (ok == (out.rfind("error: ", 0) == 0))
    fail(ok ? "success reads as an error" : "failure without 'error: '", out);
  return 0;
}
