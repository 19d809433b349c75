#include "layers/conv2d.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/autograd.h"
#include "core/comm_reduce.h"
#include "layers/init.h"
#include "layers/layer_io.h"

namespace emu {

Conv2d::Conv2d(int64_t in, int64_t out, Size2 k, Size2 stride, Size2 padding, int groups, bool with_bias)
    : in_channels(in), out_channels(out), kernel(k) {
  params.stride_h = stride.h, params.stride_w = stride.w;
  params.pad_h = padding.h, params.pad_w = padding.w;
  params.groups = groups;
  if (in <= 0 || out <= 0 || k.h <= 0 || k.w <= 0 || stride.h <= 0 || stride.w <= 0 || padding.h < 0 ||
      padding.w < 0 || groups <= 0 || in % groups || out % groups)
    throw std::invalid_argument(fmt::format(
        "Conv2d({}, {}, kernel {}x{}, stride {}x{}, padding {}x{}, groups {}): sizes, kernel, stride and groups must "
        "be positive, padding >= 0, channels divisible by groups",
        in, out, k.h, k.w, stride.h, stride.w, padding.h, padding.w, groups));
  weight = register_parameter("weight", Tensor::zeros({out, in / groups, k.h, k.w}));
  if (with_bias) bias = register_parameter("bias", Tensor::zeros({out}));
}

void Conv2d::reset_parameters() {
  const float fan_in = static_cast<float>(in_channels / params.groups * kernel.h * kernel.w);
  const float bound = 1.0f / std::sqrt(fan_in);
  init_uniform(*this, weight, bound, 0);
  if (bias.defined()) init_uniform(*this, bias, bound, 1);
}

Tensor Conv2d::forward(const Tensor& x) { return conv2d(*this, x, weight, bias, params); }

Tensor conv2d(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& cp) {
  if (x.ndim() != 4 || weight.ndim() != 4 || x.dim(1) != weight.dim(1) * cp.groups)
    throw std::invalid_argument(fmt::format("{}: input of shape {} does not fit weight {} with {} groups (want (N, {}, H, W))",
                                            m.path(), shape_string(x.shape()), shape_string(weight.shape()), cp.groups,
                                            weight.ndim() == 4 ? weight.dim(1) * cp.groups : 0));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  const int64_t N = x.dim(0), C_out = weight.dim(0), KH = weight.dim(2), KW = weight.dim(3);
  if (x.dim(2) + 2 * cp.pad_h < KH || x.dim(3) + 2 * cp.pad_w < KW)
    throw std::invalid_argument(fmt::format("{}: input of shape {} is smaller than the {}x{} kernel after padding",
                                            m.path(), shape_string(x.shape()), KH, KW));
  const int64_t OH = (x.dim(2) + 2 * cp.pad_h - KH) / cp.stride_h + 1;
  const int64_t OW = (x.dim(3) + 2 * cp.pad_w - KW) / cp.stride_w + 1;

  // x: (N, C_in, H, W), w: (C_out, C_in/G, KH, KW) -> y: (N, C_out, OH, OW).
  Tensor xr = read_as(cn.activations, x.contiguous(), draw_key(m, DrawSite::ReadInput),
                      ReadLayout{N, x.dim(1), x.dim(2) * x.dim(3)});  // block formats: blocks along C_in per (h, w)
  Tensor wr = read_weight(m, cn, weight, draw_key(m, DrawSite::ReadWeights),
                          ReadLayout{C_out, weight.numel() / C_out, 1});  // rows (C_in/G)*KH*KW
  Tensor br = bias.defined() ? read_as(cn.weights, bias, draw_key(m, DrawSite::ReadBias)) : Tensor();
  Tensor y = Tensor::zeros({N, C_out, OH, OW}, x.device());
  be.conv2d_forward(cn.mac, cp, xr, wr, br.defined() ? &br : nullptr, y, draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));
  hook_output(m, n, y);

  const Module* mp = &m;
  record_lambda(y, "conv2d", {x, weight, bias}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_grad(*mp, cn, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad),
                         ReadLayout{N, C_out, OH * OW});  // groups along output channels
    Tensor gx, gw, gb;
    if (x.requires_grad()) {
      // g: (N, C_out, OH, OW), w -> gx: (N, C_in, H, W), reduction over (co, kh, kw).
      gx = Tensor::zeros(x.shape(), gy.device());
      be.conv2d_grad_input(backward_mac(cn), cp, g, wr, gx, draw_key(*mp, DrawSite::GradInput));
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
                         be.conv2d_grad_weight(p, cp, gs.dim(0) == N ? xr : xr.narrow(0, n0, n1 - n0), gs, o, key);
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
