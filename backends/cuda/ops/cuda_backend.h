// The CUDA backend: one class implementing the backend interface (core/backend.h)
// with kernels compiled twice (backends/cuda/ops/target.h): emu::cuda::CudaBackend
// runs them on a GPU, emu::cuda_host::CudaBackend on the CPU through the host
// executor. Tensors of Device::Cuda live in memory of the caching allocator
// (allocator.h); every op runs on the backend's one stream; every CUDA error
// becomes an exception naming the op and CUDA's message. Each op family of
// core/backend_ops_*.h has its kernel file in this folder (conv.cu, pool.cu, ...).
#pragma once

#include <string>

#include "backends/cuda/ops/target.h"
#include "core/backend.h"

namespace emu::EMU_CUDA_NS {

class CudaBackend final : public Backend {
 public:
  const char* name() const override { return EMU_CUDA_ON_GPU ? "cuda" : "cuda-host"; }
  Device device() const override { return Device::Cuda; }
  // Every op has its kernels, for every format family: they call the numerics/
  // definitions that the CPU reference calls.
  bool supports(Op, Family) const override { return true; }

#define EMU_CUDA_BACKEND_OP(name, params, args) void name params override;
  EMU_BACKEND_OPS(EMU_CUDA_BACKEND_OP)
#undef EMU_CUDA_BACKEND_OP
};

// The backend, after making its allocator the one of Device::Cuda storage;
// throws std::runtime_error with a one-line reason when no device is there.
Backend& activate();
// "NVIDIA H100 ... (sm_90), driver ..." or the host executor's line.
std::string description();

}  // namespace emu::EMU_CUDA_NS
