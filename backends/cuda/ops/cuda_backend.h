// The CUDA backend: one class implementing the backend interface (core/backend.h)
// with kernels compiled twice (backends/cuda/ops/target.h): emu::cuda::CudaBackend
// runs them on a GPU, emu::cuda_host::CudaBackend on the CPU through the host
// executor. Tensors of Device::Cuda live in memory of the caching allocator
// (allocator.h); every op runs on the backend's one stream; every CUDA error
// becomes an exception naming the op and CUDA's message.
//
// Ops are grouped by kernel file (the EMU_OPS_* lists of core/backend_ops_*.h);
// a group whose kernels do not exist yet reports supports() == false and its
// ops throw "cuda: <op> has no kernel yet" (pending.h).
#pragma once

#include <string>

#include "backends/cuda/ops/target.h"
#include "core/backend.h"

namespace emu::EMU_CUDA_NS {

class CudaBackend final : public Backend {
 public:
  const char* name() const override { return EMU_CUDA_ON_GPU ? "cuda" : "cuda-host"; }
  Device device() const override { return Device::Cuda; }
  bool supports(Op op, Family family) const override;

#define EMU_CUDA_BACKEND_OP(name, params, args) void name params override;
  EMU_BACKEND_OPS(EMU_CUDA_BACKEND_OP)
#undef EMU_CUDA_BACKEND_OP
};

// Whether the op group of one kernel file has its kernels; each file defines
// its own (pending.h).
namespace group_ready {
bool conv();                // conv.cu
bool pool();                // pool.cu
bool batchnorm();           // batchnorm.cu
bool sequence();            // sequence.cu
bool layernorm();           // layernorm.cu
bool attention_products();  // attention_products.cu
bool attention_softmax();   // attention_softmax.cu
bool recurrent();           // recurrent.cu
bool sparse();              // sparse.cu
bool sparsity();            // sparsity.cu
bool blocks();              // blocks.cu
}  // namespace group_ready

// The backend, after making its allocator the one of Device::Cuda storage;
// throws std::runtime_error with a one-line reason when no device is there.
Backend& activate();
// "NVIDIA H100 ... (sm_90), driver ..." or the host executor's line.
std::string description();

}  // namespace emu::EMU_CUDA_NS
