// libFuzzer target: UCR tsv (data/ucr.h). The input is FordA_TRAIN.tsv,
// kFileSeparator, then FordA_TEST.tsv; both splits are loaded.
#include "data/ucr.h"
#include "tests/fuzz/loader_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  auto files = split_files({reinterpret_cast<const char*>(data), size}, 2);
  write_scratch("FordA_TRAIN.tsv", files[0]);
  write_scratch("FordA_TEST.tsv", files[1]);
  check_loader("ucr", inflated_total(files), [] {
    emu::data::UcrOptions o;
    o.root = scratch_dir();
    auto train = emu::data::load_ucr(o, true);
    read_both_ends(*train);
    auto test = emu::data::load_ucr(o, false);
    read_both_ends(*test);
  });
  return 0;
}
