#include <stdexcept>

#include "backends/cuda/ops/allocator.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/runtime.h"
#include "core/tensor.h"

namespace emu::EMU_CUDA_NS {

Backend& activate() {
  std::string reason;
  if (!device_available(&reason))
    throw std::runtime_error("device: cuda: " + reason +
                             " (device: cuda-host runs the same CUDA kernels on the CPU, slowly)");
  static CudaBackend backend;
  Storage::set_cuda_allocator({&allocate_zeroed, &release});
  return backend;
}

std::string description() { return device_description(); }

}  // namespace emu::EMU_CUDA_NS
