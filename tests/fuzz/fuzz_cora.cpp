// libFuzzer target: Cora content and cites (data/cora.h). The input is
// cora.content, kFileSeparator, then cora.cites. Small splits, so that graphs
// of a few nodes get a split instead of the error of a too-small graph.
#include "data/cora.h"
#include "tests/fuzz/loader_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  auto files = split_files({reinterpret_cast<const char*>(data), size}, 2);
  write_scratch("cora.content", files[0]);
  write_scratch("cora.cites", files[1]);
  check_loader("cora", inflated_total(files), [] {
    emu::data::CoraOptions o;
    o.root = scratch_dir();
    o.train_per_class = 1;
    o.val_size = 1;
    o.test_size = 1;
    auto d = emu::data::load_cora(o);
    read_both_ends(*d);
  });
  return 0;
}
