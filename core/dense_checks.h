// The argument checks of quantize and gemm (EMU_OPS_DENSE, core/backend_ops_dense.h),
// one definition for every backend, so a bad call fails with the same message
// on the CPU and on a device, before any work. Each check throws
// std::invalid_argument naming the op and the shapes.
#pragma once

#include "core/tensor.h"

namespace emu {

// x -> y of x's shape (any views).
void check_quantize(const Tensor& x, const Tensor& y);

// a (M,K), b (K,N), bias (N) or null -> c (M,N), contiguous.
void check_gemm(const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor& c);

}  // namespace emu
