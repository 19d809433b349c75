#include "core/conv_checks.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "core/op_checks.h"

namespace emu {
namespace {

[[noreturn]] void bad_shapes(const char* op, const Conv2dParams& cp, const std::string& what) {
  throw std::invalid_argument(fmt::format("{} (stride {}x{}, padding {}x{}, dilation {}x{}, groups {}): {}",
                                          op, cp.stride_h, cp.stride_w, cp.pad_h, cp.pad_w, cp.dilation_h,
                                          cp.dilation_w, cp.groups, what));
}

}  // namespace

ConvShape conv_shape(const char* op, const Conv2dParams& cp, const Shape& xs, const Shape& ws) {
  if (xs.size() != 4 || ws.size() != 4)
    bad_shapes(op, cp,
               fmt::format("x {} and w {} must both have 4 dimensions", shape_string(xs), shape_string(ws)));
  if (cp.stride_h < 1 || cp.stride_w < 1 || cp.pad_h < 0 || cp.pad_w < 0 || cp.dilation_h < 1 ||
      cp.dilation_w < 1 || cp.groups < 1)
    bad_shapes(op, cp, "strides, dilations and groups must be >= 1, padding >= 0");
  ConvShape g{};
  g.N = xs[0], g.C_in = xs[1], g.H = xs[2], g.W = xs[3];
  g.C_out = ws[0], g.KH = ws[2], g.KW = ws[3];
  g.G = cp.groups;
  g.sh = cp.stride_h, g.sw = cp.stride_w, g.ph = cp.pad_h, g.pw = cp.pad_w;
  g.dh = cp.dilation_h, g.dw = cp.dilation_w;
  if (g.C_in % g.G || g.C_out % g.G)
    bad_shapes(
        op, cp,
        fmt::format("{} input and {} output channels are not divisible by the groups", g.C_in, g.C_out));
  g.Cig = g.C_in / g.G;
  g.Cog = g.C_out / g.G;
  if (ws[1] != g.Cig || g.KH < 1 || g.KW < 1)
    bad_shapes(op, cp,
               fmt::format("w {} does not fit x {} (want ({}, {}, KH, KW))", shape_string(ws),
                           shape_string(xs), g.C_out, g.Cig));
  // The dilated kernel spans d (K - 1) + 1 input positions.
  const int64_t eh = g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1, ew = g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1;
  if (eh < 0 || ew < 0)
    bad_shapes(op, cp,
               fmt::format("dilated kernel {}x{} larger than the padded input of x {}", g.dh * (g.KH - 1) + 1,
                           g.dw * (g.KW - 1) + 1, shape_string(xs)));
  g.OH = eh / g.sh + 1;
  g.OW = ew / g.sw + 1;
  return g;
}

ConvShape check_conv2d_forward(const Conv2dParams& cp, const Tensor& x, const Tensor& w, const Tensor* bias,
                               const Tensor& y) {
  const char* op = "conv2d_forward";
  const ConvShape g = conv_shape(op, cp, x.shape(), w.shape());
  if (bias) check_shape(op, "bias", *bias, {g.C_out});
  check_result(op, "y", y, {g.N, g.C_out, g.OH, g.OW});
  return g;
}

ConvShape check_conv2d_grad_input(const Conv2dParams& cp, const Tensor& gy, const Tensor& w,
                                  const Tensor& gx) {
  const char* op = "conv2d_grad_input";
  const ConvShape g = conv_shape(op, cp, gx.shape(), w.shape());
  check_shape(op, "gy", gy, {g.N, g.C_out, g.OH, g.OW});
  check_result(op, "gx", gx, {g.N, g.C_in, g.H, g.W});
  return g;
}

ConvShape check_conv2d_grad_weight(const Conv2dParams& cp, const Tensor& x, const Tensor& gy,
                                   const Tensor& gw) {
  const char* op = "conv2d_grad_weight";
  const ConvShape g = conv_shape(op, cp, x.shape(), gw.shape());
  check_shape(op, "gy", gy, {g.N, g.C_out, g.OH, g.OW});
  check_result(op, "gw", gw, {g.C_out, g.Cig, g.KH, g.KW});
  return g;
}

void check_channel_sum(const Tensor& x, const Tensor& y) {
  if (x.ndim() != 3)
    throw std::invalid_argument("channel_sum: x must be (N, C, S), got " + shape_string(x.shape()));
  check_result("channel_sum", "y", y, {x.dim(1)});
}

}  // namespace emu
