#include <stdexcept>

#include "backends/cuda/ops/allocator.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/runtime.h"
#include "core/tensor.h"

namespace emu::EMU_CUDA_NS {

// Memory, dense, element-wise and optimizer ops always have kernels (one file
// each in this folder); the other groups say whether theirs exist yet.
bool CudaBackend::supports(Op op, Family) const {
  switch (op) {
#define EMU_CUDA_CASE(name, params, args) case Op::name:
    EMU_OPS_MEMORY(EMU_CUDA_CASE)
    EMU_OPS_DENSE(EMU_CUDA_CASE)
    EMU_OPS_ELEMENTWISE(EMU_CUDA_CASE)
    EMU_OPS_OPTIM(EMU_CUDA_CASE)
    return true;
    EMU_OPS_CONV(EMU_CUDA_CASE) return group_ready::conv();
    EMU_OPS_POOL(EMU_CUDA_CASE) return group_ready::pool();
    EMU_OPS_BATCHNORM(EMU_CUDA_CASE) return group_ready::batchnorm();
    EMU_OPS_SEQUENCE(EMU_CUDA_CASE) return group_ready::sequence();
    EMU_OPS_LAYERNORM(EMU_CUDA_CASE) return group_ready::layernorm();
    EMU_OPS_ATTENTION_PRODUCTS(EMU_CUDA_CASE) return group_ready::attention_products();
    EMU_OPS_ATTENTION_SOFTMAX(EMU_CUDA_CASE) return group_ready::attention_softmax();
    EMU_OPS_RECURRENT(EMU_CUDA_CASE) return group_ready::recurrent();
    EMU_OPS_SPARSE(EMU_CUDA_CASE) return group_ready::sparse();
    EMU_OPS_SPARSITY(EMU_CUDA_CASE) return group_ready::sparsity();
    EMU_OPS_BLOCKS(EMU_CUDA_CASE) return group_ready::blocks();
#undef EMU_CUDA_CASE
  }
  return false;
}

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
