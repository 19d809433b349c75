// libFuzzer target: MNIST IDX (data/mnist.h). The input is the images file,
// kFileSeparator, then the labels file; both are loaded as the t10k set.
#include "data/mnist.h"
#include "tests/fuzz/loader_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  auto files = split_files({reinterpret_cast<const char*>(data), size}, 2);
  write_scratch("t10k-images-idx3-ubyte", files[0]);
  write_scratch("t10k-labels-idx1-ubyte", files[1]);
  check_loader("mnist", inflated_total(files), [] {
    emu::data::MnistOptions o;
    o.root = scratch_dir();
    auto d = emu::data::load_mnist(o);
    read_both_ends(*d);
  });
  return 0;
}
