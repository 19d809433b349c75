// Stubs of ops whose kernels are still to come: each op group of this folder
// has one kernel file (conv.cu, pool.cu, ...) that defines its group_ready::
// function (cuda_backend.h) and either its kernels or, until they exist, these
// stubs. supports() reports a stubbed group as unsupported, so `emutrain
// validate` shows "unsup" instead of a failure, and a call names the op.
#pragma once

#include <stdexcept>

#include "backends/cuda/ops/cuda_backend.h"

// The stubs ignore their arguments by design (the including file wraps them in
// `#pragma GCC diagnostic ignored "-Wunused-parameter"`).
#define EMU_CUDA_NO_KERNEL(name, params, args)                                             \
  void CudaBackend::name params {                                                          \
    throw std::runtime_error("cuda: " #name " has no kernel yet (see emutrain validate)"); \
  }
