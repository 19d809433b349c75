// libFuzzer target: CIFAR-10 binary (data/cifar10.h). The input is test_batch.bin.
#include "data/cifar10.h"
#include "tests/fuzz/loader_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  std::string_view file(reinterpret_cast<const char*>(data), size);
  write_scratch("test_batch.bin", file);
  check_loader("cifar10", inflated_total({file}), [] {
    emu::data::Cifar10Options o;
    o.root = scratch_dir();
    auto d = emu::data::load_cifar10(o, false);
    read_both_ends(*d);
  });
  return 0;
}
