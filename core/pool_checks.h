// The argument checks of the 2-D pooling ops (EMU_OPS_POOL, core/backend_ops_nn.h),
// one definition for every backend, so a bad call fails with the same message on
// the CPU and on a device, before any work. Each check takes the op's tensors as
// the op does, throws std::invalid_argument naming the op and the argument, and
// returns the pooling's windows (numerics/pool_windows.h).
#pragma once

#include <cstdint>

#include "core/backend_types.h"
#include "core/tensor.h"
#include "numerics/pool_windows.h"

namespace emu {

// A pooling of x (N, C, h.in, w.in) into (N, C, h.out, w.out).
struct PoolShape {
  int64_t N, C;
  PoolAxis h, w;
  Shape in_shape() const { return {N, C, h.in, w.in}; }
  Shape out_shape() const { return {N, C, h.out, w.out}; }
};

// x (N,C,H,W) -> y (N,C,OH,OW), argmax (N,C,OH,OW)
PoolShape check_max_pool2d_forward(const Pool2dParams& pp, const Tensor& x, const Tensor& y,
                                   const Tensor& argmax);
// gy (N,C,OH,OW), argmax (N,C,OH,OW) -> gx (N,C,H,W)
PoolShape check_max_pool2d_backward(const Pool2dParams& pp, const Tensor& gy, const Tensor& argmax,
                                    const Tensor& gx);
// x (N,C,H,W) -> y (N,C,OH,OW)
PoolShape check_avg_pool2d_forward(const Pool2dParams& pp, const Tensor& x, const Tensor& y);
// gy (N,C,OH,OW) -> gx (N,C,H,W)
PoolShape check_avg_pool2d_backward(const Pool2dParams& pp, const Tensor& gy, const Tensor& gx);
// x (N,C,H,W) -> y (N,C,OH,OW), OH and OW from y
PoolShape check_adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& y);
// gy (N,C,OH,OW) -> gx (N,C,H,W), OH and OW from gy
PoolShape check_adaptive_avg_pool2d_backward(const Tensor& gy, const Tensor& gx);

}  // namespace emu
