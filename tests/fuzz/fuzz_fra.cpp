// libFuzzer target: fra.txt (data/fra_eng.h). The input is the file; it is
// loaded with word tokens and, when its first byte is odd, character tokens
// from French to English, so both tokenisers see it.
#include "data/fra_eng.h"
#include "tests/fuzz/loader_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  std::string_view file(reinterpret_cast<const char*>(data), size);
  write_scratch("fra.txt", file);
  const bool chars = size > 0 && (data[0] & 1) != 0;
  check_loader("fra", inflated_total({file}), [chars] {
    emu::data::FraEngOptions o;
    o.root = scratch_dir();
    o.tokens = chars ? emu::data::TokenKind::Char : emu::data::TokenKind::Word;
    o.reverse = chars;
    o.test_fraction = 0.25;
    auto d = emu::data::load_fra_eng(o);
    read_both_ends(*d);
  });
  return 0;
}
