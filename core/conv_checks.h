// The geometry of the convolution ops (EMU_OPS_CONV, core/backend_ops_nn.h) from
// the operand shapes, with the argument checks: one definition for every
// backend, so a bad call fails with the same message on the CPU and on a
// device, before any work. Each check throws std::invalid_argument naming the
// op and the argument.
#pragma once

#include <cstdint>

#include "core/backend_types.h"
#include "core/tensor.h"

namespace emu {

// Sizes, strides, padding and dilation of one convolution (plain data: a
// backend wraps it with the index arithmetic its kernels need).
struct ConvShape {
  int64_t N, C_in, H, W, C_out, KH, KW, OH, OW, G, Cig, Cog;  // Cig, Cog: channels per group
  int64_t sh, sw, ph, pw, dh, dw;
};

// x (N,C_in,H,W) and w (C_out,C_in/G,KH,KW) -> the shape of the op, with
// OH = (H + 2 pad_h - dilation_h (KH - 1) - 1) / stride_h + 1 (floor), OW alike.
// Throws std::invalid_argument naming `op`, the parameters and the bad shape.
ConvShape conv_shape(const char* op, const Conv2dParams& cp, const Shape& xs, const Shape& ws);

// x (N,C_in,H,W), w (C_out,C_in/G,KH,KW), bias (C_out) or null -> y (N,C_out,OH,OW)
ConvShape check_conv2d_forward(const Conv2dParams& cp, const Tensor& x, const Tensor& w, const Tensor* bias,
                               const Tensor& y);
// gy (N,C_out,OH,OW), w (C_out,C_in/G,KH,KW) -> gx (N,C_in,H,W)
ConvShape check_conv2d_grad_input(const Conv2dParams& cp, const Tensor& gy, const Tensor& w,
                                  const Tensor& gx);
// x (N,C_in,H,W), gy (N,C_out,OH,OW) -> gw (C_out,C_in/G,KH,KW)
ConvShape check_conv2d_grad_weight(const Conv2dParams& cp, const Tensor& x, const Tensor& gy,
                                   const Tensor& gw);

// channel_sum: x (N,C,S) -> y (C).
void check_channel_sum(const Tensor& x, const Tensor& y);

}  // namespace emu
