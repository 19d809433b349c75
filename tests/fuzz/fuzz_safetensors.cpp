// libFuzzer target: safetensors checkpoints (train/safetensors.h). The input is
// the file. read_safetensors either returns tensors, each of the byte size its
// header gave (checked again here from the file), or throws CheckpointError with
// a one-line message; it allocates within the loaders' bound of the file size
// (a header announcing more than the file holds is refused before).
#include "tests/fuzz/loader_check.h"
#include "train/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  const std::string path = write_scratch("model.safetensors", {reinterpret_cast<const char*>(data), size});
  AllocMeter meter;
  meter.start();
  try {
    emu::train::TensorFile f = emu::train::read_safetensors(path);
    size_t bytes = 0;
    for (const auto& [name, t] : f.tensors) bytes += 4 * static_cast<size_t>(t.numel());
    if (bytes > size) fail("safetensors", "tensors hold more bytes than the file");
  } catch (const emu::train::CheckpointError& e) {
    require_one_line(e);
  }
  require_alloc_bound(meter, size, "safetensors");
  return 0;
}
