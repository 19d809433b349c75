#include "layers/conv1d.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/autograd.h"
#include "layers/init.h"
#include "layers/layer_io.h"

namespace emu {

Conv1d::Conv1d(int64_t in, int64_t out, int k, int stride, int padding, int dilation, int groups, bool with_bias)
    : in_channels(in), out_channels(out), kernel(k) {
  params.stride = stride, params.padding = padding, params.dilation = dilation, params.groups = groups;
  if (in <= 0 || out <= 0 || k <= 0 || stride <= 0 || padding < 0 || dilation <= 0 || groups <= 0 || in % groups ||
      out % groups)
    throw std::invalid_argument(fmt::format(
        "Conv1d({}, {}, kernel {}, stride {}, padding {}, dilation {}, groups {}): sizes, kernel, stride, dilation and "
        "groups must be positive, padding >= 0, channels divisible by groups",
        in, out, k, stride, padding, dilation, groups));
  weight = register_parameter("weight", Tensor::zeros({out, in / groups, k}));
  if (with_bias) bias = register_parameter("bias", Tensor::zeros({out}));
}

void Conv1d::reset_parameters() {
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_channels / params.groups * kernel));
  init_uniform(*this, weight, bound, 0);
  if (bias.defined()) init_uniform(*this, bias, bound, 1);
}

Tensor Conv1d::forward(const Tensor& x) { return conv1d(*this, x, weight, bias, params); }

Tensor conv1d(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dParams& cp) {
  if (x.ndim() != 3 || weight.ndim() != 3 || x.dim(1) != weight.dim(1) * cp.groups)
    throw std::invalid_argument(fmt::format("{}: input of shape {} does not fit weight {} with {} groups (want (N, {}, L))",
                                            m.path(), shape_string(x.shape()), shape_string(weight.shape()), cp.groups,
                                            weight.ndim() == 3 ? weight.dim(1) * cp.groups : 0));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  const int64_t N = x.dim(0), C_out = weight.dim(0), KL = weight.dim(2);
  const int64_t extra = x.dim(2) + 2 * static_cast<int64_t>(cp.padding) - cp.dilation * (KL - 1) - 1;
  if (extra < 0)
    throw std::invalid_argument(fmt::format("{}: input of shape {} is shorter than the dilated kernel ({} positions) "
                                            "after padding",
                                            m.path(), shape_string(x.shape()), cp.dilation * (KL - 1) + 1));
  const int64_t OL = extra / cp.stride + 1;

  // x: (N, C_in, L), w: (C_out, C_in/G, KL) -> y: (N, C_out, OL).
  Tensor xr = read_as(cn.activations, x.contiguous(), draw_key(m, DrawSite::ReadInput),
                      ReadLayout{N, x.dim(1), x.dim(2)});  // block formats: blocks along C_in per position
  Tensor wr = read_weight(m, cn, weight, draw_key(m, DrawSite::ReadWeights),
                          ReadLayout{C_out, weight.numel() / C_out, 1});  // rows (C_in/G)*KL
  Tensor br = bias.defined() ? read_as(cn.weights, bias, draw_key(m, DrawSite::ReadBias)) : Tensor();
  Tensor y = Tensor::zeros({N, C_out, OL}, x.device());
  be.conv1d_forward(cn.mac, cp, xr, wr, br.defined() ? &br : nullptr, y, draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));
  hook_output(m, n, y);

  const Module* mp = &m;
  record_lambda(y, "conv1d", {x, weight, bias}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_grad(*mp, cn, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad),
                         ReadLayout{N, C_out, OL});  // groups along output channels
    Tensor gx, gw, gb;
    if (x.requires_grad()) {
      // g: (N, C_out, OL), w -> gx: (N, C_in, L), reduction over (co, k).
      gx = Tensor::zeros(x.shape(), gy.device());
      be.conv1d_grad_input(backward_mac(cn), cp, g, wr, gx, draw_key(*mp, DrawSite::GradInput));
      finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
    }
    if (weight.requires_grad()) {
      // x, g -> gw: (C_out, C_in/G, KL), reduction over (n, ol).
      gw = Tensor::zeros(weight.shape(), gy.device());
      be.conv1d_grad_weight(backward_mac(cn), cp, xr, g, gw, draw_key(*mp, DrawSite::GradWeight));
      finish_grad(n, gw, draw_key(*mp, DrawSite::GradWeight));
    }
    if (bias.defined() && bias.requires_grad()) {
      // g: (N, C_out, OL) -> gb: (C_out), a plain sum over (n, ol).
      gb = Tensor::zeros({C_out}, gy.device());
      be.channel_sum(sum_mac(cn), g, gb, draw_key(*mp, DrawSite::GradBias));
      finish_grad(n, gb, draw_key(*mp, DrawSite::GradBias));
    }
    return {gx, gw, gb};
  });
  return y;
}

}  // namespace emu
