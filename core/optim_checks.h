// The argument checks of the optimizer ops (EMU_OPS_OPTIM, core/backend_ops_optim.h),
// one definition for every backend, so a bad call fails with the same message
// on the CPU and on a device, before any work. Each check throws
// std::invalid_argument naming the op and the shapes.
#pragma once

#include "core/tensor.h"

namespace emu {

// param, grad, buf: one shape, contiguous; buf is checked only with momentum (the op reads it then).
void check_sgd_update(bool momentum, const Tensor& param, const Tensor& grad, const Tensor& buf);
// param, grad, m, v: one shape, contiguous.
void check_adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v);
// x: any shape, contiguous.
void check_scale(const Tensor& x);

}  // namespace emu
