#include "layers/layernorm.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/autograd.h"
#include "layers/layer_io.h"

namespace emu {

LayerNorm::LayerNorm(int64_t d, float eps_, bool affine, bool with_bias) : normalized_shape(d), eps(eps_) {
  if (d <= 0 || !(eps_ > 0.0f))
    throw std::invalid_argument(
        fmt::format("LayerNorm({}, eps {}): size must be positive and eps > 0", d, eps_));
  if (affine) {
    weight = register_parameter("weight", Tensor::full({d}, 1.0f));
    if (with_bias) bias = register_parameter("bias", Tensor::zeros({d}));
  }
}

void LayerNorm::reset_parameters() {
  if (weight.defined()) weight.fill(1.0f);
  if (bias.defined()) bias.fill(0.0f);
}

Tensor layer_norm(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  const int64_t D = x.ndim() >= 1 ? x.dim(-1) : 0;
  if (x.ndim() < 1 || D == 0 || (weight.defined() && weight.shape() != Shape{D}) ||
      (bias.defined() && bias.shape() != Shape{D}))
    throw std::invalid_argument(
        fmt::format("{}: layer_norm of an input of shape {} with weight {} and bias {}", m.path(),
                    shape_string(x.shape()), weight.defined() ? shape_string(weight.shape()) : "none",
                    bias.defined() ? shape_string(bias.shape()) : "none"));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  const DrawKey fwd = draw_key(m, DrawSite::Forward);
  const int64_t R = x.numel() / D;

  // x: (R, D) -> y, xhat: (R, D), invstd: (R)
  Tensor xr = read_as(cn.activations, x.contiguous().view({R, D}), draw_key(m, DrawSite::ReadInput));
  Tensor gamma =
      weight.defined() ? read_as(cn.weights, weight, draw_key(m, DrawSite::ReadWeights)) : Tensor();
  Tensor beta = bias.defined() ? read_as(cn.weights, bias, draw_key(m, DrawSite::ReadBias)) : Tensor();
  Tensor y = Tensor::zeros({R, D}, x.device());
  Tensor xhat = Tensor::zeros({R, D}, x.device());
  Tensor invstd = Tensor::zeros({R}, x.device());
  be.layer_norm_forward(cn.mac, eps, xr, gamma.defined() ? &gamma : nullptr, beta.defined() ? &beta : nullptr,
                        y, xhat, invstd, fwd);
  finish_output(n, y, fwd);
  Tensor result = y.view(x.shape());

  const Module* mp = &m;
  record_lambda(result, "layer_norm", {x, weight, bias}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_as(cn.grads, gy.contiguous().view({R, D}), draw_key(*mp, DrawSite::ReadGrad));
    Tensor gx, gw, gb;
    if (x.requires_grad()) gx = Tensor::zeros({R, D}, gy.device());
    if (weight.defined() && weight.requires_grad()) gw = Tensor::zeros({D}, gy.device());
    if (bias.defined() && bias.requires_grad()) gb = Tensor::zeros({D}, gy.device());
    // g, xhat: (R, D), invstd: (R), gamma: (D) -> gx: (R, D), ggamma, gbeta: (D)
    be.layer_norm_backward(backward_mac(cn), g, xhat, invstd, gamma.defined() ? &gamma : nullptr,
                           gx.defined() ? &gx : nullptr, gw.defined() ? &gw : nullptr,
                           gb.defined() ? &gb : nullptr, draw_key(*mp, DrawSite::GradInput));
    finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
    finish_grad(n, gw, draw_key(*mp, DrawSite::GradWeight));
    finish_grad(n, gb, draw_key(*mp, DrawSite::GradBias));
    return {gx.defined() ? gx.view(x.shape()) : gx, gw, gb};
  });
  return result;
}

}  // namespace emu
