#include "layers/conv2d.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/autograd.h"
#include "core/comm_reduce.h"
#include "layers/init.h"
#include "layers/layer_io.h"

namespace emu {
namespace {

// t as the backend's 4-D operand: (A, B, H, W) itself, (A, B, L) viewed as (A, B, 1, L) (shares t's
// storage, so a result written through the view lands in t).
Tensor planar(const Tensor& t) {
  if (t.ndim() == 4) return t;
  return t.contiguous().view({t.dim(0), t.dim(1), 1, t.dim(2)});
}

}  // namespace

void check_conv_arguments(const std::string& layer, int64_t in, int64_t out, int kernel_h, int kernel_w,
                          const Conv2dParams& cp) {
  if (in <= 0 || out <= 0 || kernel_h <= 0 || kernel_w <= 0 || cp.stride_h <= 0 || cp.stride_w <= 0 ||
      cp.pad_h < 0 || cp.pad_w < 0 || cp.dilation_h <= 0 || cp.dilation_w <= 0 || cp.groups <= 0 ||
      in % cp.groups || out % cp.groups)
    throw std::invalid_argument(
        fmt::format("{}: sizes, kernel, stride, dilation and groups must be positive, "
                    "padding >= 0, channels divisible by groups",
                    layer));
}

void reset_conv_parameters(const Module& m, Tensor& weight, Tensor& bias) {
  const float fan_in = static_cast<float>(weight.numel() / weight.dim(0));
  const float bound = 1.0f / std::sqrt(fan_in);
  init_uniform(m, weight, bound, 0);
  if (bias.defined()) init_uniform(m, bias, bound, 1);
}

Conv2d::Conv2d(int64_t in, int64_t out, Size2 k, Size2 stride, Size2 padding, int groups, bool with_bias)
    : in_channels(in), out_channels(out), kernel(k) {
  params.stride_h = stride.h, params.stride_w = stride.w;
  params.pad_h = padding.h, params.pad_w = padding.w;
  params.groups = groups;
  check_conv_arguments(fmt::format("Conv2d({}, {}, kernel {}x{}, stride {}x{}, padding {}x{}, groups {})", in,
                                   out, k.h, k.w, stride.h, stride.w, padding.h, padding.w, groups),
                       in, out, k.h, k.w, params);
  weight = register_parameter("weight", Tensor::zeros({out, in / groups, k.h, k.w}));
  if (with_bias) bias = register_parameter("bias", Tensor::zeros({out}));
}

void Conv2d::reset_parameters() { reset_conv_parameters(*this, weight, bias); }

Tensor Conv2d::forward(const Tensor& x) { return conv2d(*this, x, weight, bias, params); }

Tensor conv2d(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dParams& cp) {
  return convolution("conv2d", 4, m, x, weight, bias, cp);
}

Tensor convolution(const char* op, int64_t rank, const Module& m, const Tensor& x, const Tensor& weight,
                   const Tensor& bias, const Conv2dParams& cp) {
  const bool one_d = rank == 3;  // Conv1d: (N, C_in, L) is (N, C_in, 1, L)
  if (x.ndim() != rank || weight.ndim() != rank || x.dim(1) != weight.dim(1) * cp.groups)
    throw std::invalid_argument(
        fmt::format("{}: input of shape {} does not fit weight {} with {} groups (want (N, {}, {}))",
                    m.path(), shape_string(x.shape()), shape_string(weight.shape()), cp.groups,
                    weight.ndim() == rank ? weight.dim(1) * cp.groups : 0, one_d ? "L" : "H, W"));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  const int64_t N = x.dim(0), C_out = weight.dim(0);
  const int64_t H = one_d ? 1 : x.dim(2), W = x.dim(rank - 1);
  const int64_t KH = one_d ? 1 : weight.dim(2), KW = weight.dim(rank - 1);
  // The dilated kernel spans dilation (K - 1) + 1 input positions.
  const int64_t span_h = cp.dilation_h * (KH - 1) + 1, span_w = cp.dilation_w * (KW - 1) + 1;
  if (H + 2 * cp.pad_h < span_h || W + 2 * cp.pad_w < span_w)
    throw std::invalid_argument(
        one_d
            ? fmt::format(
                  "{}: input of shape {} is shorter than the dilated kernel ({} positions) after padding",
                  m.path(), shape_string(x.shape()), span_w)
            : fmt::format(
                  "{}: input of shape {} is smaller than the dilated kernel ({}x{} positions) after padding",
                  m.path(), shape_string(x.shape()), span_h, span_w));
  const int64_t OH = (H + 2 * cp.pad_h - span_h) / cp.stride_h + 1;
  const int64_t OW = (W + 2 * cp.pad_w - span_w) / cp.stride_w + 1;
  const Shape y_shape = one_d ? Shape{N, C_out, OW} : Shape{N, C_out, OH, OW};

  // x: (N, C_in, H, W), w: (C_out, C_in/G, KH, KW) -> y: (N, C_out, OH, OW).
  Tensor xr = read_as(cn.activations, x.contiguous(), draw_key(m, DrawSite::ReadInput),
                      ReadLayout{N, x.dim(1), H * W});  // block formats: blocks along C_in per (h, w)
  Tensor wr = read_weight(m, cn, weight, draw_key(m, DrawSite::ReadWeights),
                          ReadLayout{C_out, weight.numel() / C_out, 1});  // rows (C_in/G)*KH*KW
  Tensor br = bias.defined() ? read_as(cn.weights, bias, draw_key(m, DrawSite::ReadBias)) : Tensor();
  Tensor y = Tensor::uninitialized(y_shape, x.device());  // the GEMM writes every output
  Tensor y4 = planar(y);
  be.conv2d_forward(cn.mac, cp, planar(xr), planar(wr), br.defined() ? &br : nullptr, y4,
                    draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));
  hook_output(m, n, y);

  const Module* mp = &m;
  record_lambda(y, op, {x, weight, bias}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_grad(*mp, cn, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad),
                         ReadLayout{N, C_out, OH * OW});  // groups along output channels
    Tensor gx, gw, gb;
    if (x.requires_grad()) {
      // g: (N, C_out, OH, OW), w -> gx: (N, C_in, H, W), reduction over (co, kh, kw).
      gx = Tensor::uninitialized(x.shape(), gy.device());  // every pixel written (by one phase when strided)
      Tensor gx4 = planar(gx);
      be.conv2d_grad_input(backward_mac(cn), cp, planar(g), planar(wr), gx4,
                           draw_key(*mp, DrawSite::GradInput));
      finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
    }
    if (weight.requires_grad()) {
      // x, g -> gw: (C_out, C_in/G, KH, KW), reduction over (n, oh, ow).
      // Split by rank shares of (n, oh, ow) under data parallelism (core/comm_reduce.h).
      gw = Tensor::zeros(weight.shape(), gy.device());
      const DrawKey key = draw_key(*mp, DrawSite::GradWeight);
      reduce_over_rows(backward_mac(cn), N * OH * OW, gw, mp->path() + " grad-weight",
                       [&](const MacPolicy& p, int64_t k0, int64_t k1, Tensor& o) {
                         const int64_t n0 = k0 / (OH * OW), n1 = (k1 + OH * OW - 1) / (OH * OW);
                         Tensor gs = sample_term_range(g, k0, k1);
                         Tensor o4 = planar(o);
                         be.conv2d_grad_weight(p, cp, planar(gs.dim(0) == N ? xr : xr.narrow(0, n0, n1 - n0)),
                                               planar(gs), o4, key);
                       });
      finish_grad(n, gw, key);
    }
    if (bias.defined() && bias.requires_grad()) {
      // g: (N, C_out, OH*OW) -> gb: (C_out), a plain sum over (n, oh, ow).
      gb = Tensor::zeros({C_out}, gy.device());
      const DrawKey key = draw_key(*mp, DrawSite::GradBias);
      reduce_over_rows(sum_mac(cn), N * OH * OW, gb, mp->path() + " bias-grad",
                       [&](const MacPolicy& p, int64_t k0, int64_t k1, Tensor& o) {
                         Tensor gs = sample_term_range(g, k0, k1);
                         be.channel_sum(p, gs.view({gs.dim(0), C_out, OH * OW}), o, key);
                       });
      finish_grad(n, gb, key);
    }
    return {gx, gw, gb};
  });
  return y;
}

}  // namespace emu
