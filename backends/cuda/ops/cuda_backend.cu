#include "backends/cuda/ops/cuda_backend.h"

#include <stdexcept>

#include "backends/cuda/ops/allocator.h"
#include "backends/cuda/ops/runtime.h"

namespace emu::EMU_CUDA_NS {

// The families with kernels (memory, dense, element-wise, optimizer: one file
// each in this folder) and the ones still to come.
bool CudaBackend::supports(Op op, Family) const {
  switch (op) {
#define EMU_CUDA_HAS_KERNEL(name, params, args) case Op::name:
    EMU_OPS_MEMORY(EMU_CUDA_HAS_KERNEL)
    EMU_OPS_DENSE(EMU_CUDA_HAS_KERNEL)
    EMU_OPS_ELEMENTWISE(EMU_CUDA_HAS_KERNEL)
    EMU_OPS_OPTIM(EMU_CUDA_HAS_KERNEL)
#undef EMU_CUDA_HAS_KERNEL
    return true;
    default:
      return false;
  }
}

// The stubs ignore their arguments by design.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define EMU_CUDA_NO_KERNEL(name, params, args) \
  void CudaBackend::name params { throw std::runtime_error("cuda: " #name " has no kernel yet (see emutrain validate)"); }
EMU_OPS_NN(EMU_CUDA_NO_KERNEL)
EMU_OPS_SEQUENCE(EMU_CUDA_NO_KERNEL)
EMU_OPS_ATTENTION(EMU_CUDA_NO_KERNEL)
EMU_OPS_RECURRENT(EMU_CUDA_NO_KERNEL)
EMU_OPS_SPARSE(EMU_CUDA_NO_KERNEL)
EMU_OPS_SPARSITY(EMU_CUDA_NO_KERNEL)
EMU_OPS_BLOCKS(EMU_CUDA_NO_KERNEL)
#undef EMU_CUDA_NO_KERNEL
#pragma GCC diagnostic pop

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
