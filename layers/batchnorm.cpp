#include "layers/batchnorm.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/autograd.h"
#include "layers/layer_io.h"

namespace emu {

BatchNorm::BatchNorm(int64_t c, float eps_, float momentum_, bool affine_, bool track)
    : num_features(c), eps(eps_), momentum(momentum_), affine(affine_), track_running_stats(track) {
  if (c <= 0 || !(eps_ > 0.0f) || !(momentum_ >= 0.0f && momentum_ <= 1.0f))
    throw std::invalid_argument(
        fmt::format("BatchNorm({}, eps {}, momentum {}): features must be positive, eps > 0, "
                    "momentum in [0, 1]",
                    c, eps_, momentum_));
  if (affine) {
    weight = register_parameter("weight", Tensor::full({c}, 1.0f));
    bias = register_parameter("bias", Tensor::zeros({c}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", Tensor::zeros({c}));
    running_var = register_buffer("running_var", Tensor::full({c}, 1.0f));
    num_batches_tracked = register_buffer("num_batches_tracked", Tensor::scalar(0.0f));
  }
}

void BatchNorm::reset_parameters() {
  if (affine) {
    weight.fill(1.0f);
    bias.fill(0.0f);
  }
  if (track_running_stats) {
    running_mean.fill(0.0f);
    running_var.fill(1.0f);
    num_batches_tracked.fill(0.0f);
  }
}

void BatchNorm1d::check_input(const Tensor& x) const {
  if ((x.ndim() != 2 && x.ndim() != 3) || x.dim(1) != num_features)
    throw std::invalid_argument(fmt::format("{}: input of shape {} is not (N, {}) or (N, {}, L)", path(),
                                            shape_string(x.shape()), num_features, num_features));
}

void BatchNorm2d::check_input(const Tensor& x) const {
  if (x.ndim() != 4 || x.dim(1) != num_features)
    throw std::invalid_argument(fmt::format("{}: input of shape {} is not (N, {}, H, W)", path(),
                                            shape_string(x.shape()), num_features));
}

Tensor BatchNorm::forward(const Tensor& x) {
  check_input(x);
  const bool batch_stats = is_training() || !track_running_stats;
  // With batch statistics the running ones (when tracked) are updated, else they normalise.
  Tensor y = batch_norm(*this, x, weight, bias, running_mean, running_var, batch_stats, momentum, eps);
  if (is_training() && track_running_stats) {
    // One binary32 addition of 1 on the counter's device (the backend's accumulate).
    const Device dev = num_batches_tracked.device();
    backend_for(dev).accumulate(num_batches_tracked, Tensor::full({}, 1.0f, dev));
  }
  return y;
}

Tensor batch_norm(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias,
                  Tensor running_mean, Tensor running_var, bool batch_stats, float momentum, float eps) {
  if (x.ndim() < 2)
    throw std::invalid_argument(
        fmt::format("{}: input of shape {} has no channel dimension", m.path(), shape_string(x.shape())));
  const int64_t N = x.dim(0), C = x.dim(1), S = x.numel() / std::max<int64_t>(N * C, 1);
  if (batch_stats && N * S <= 1)
    throw std::invalid_argument(
        fmt::format("{}: expected more than 1 value per channel when training, got input of shape {}",
                    m.path(), shape_string(x.shape())));
  if (!batch_stats && !(running_mean.defined() && running_var.defined()))
    throw std::invalid_argument(
        fmt::format("{}: normalising with running statistics that are not tracked", m.path()));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  const DrawKey fwd = draw_key(m, DrawSite::Forward), wkey = draw_key(m, DrawSite::ReadWeights);

  // x: (N, C, S) -> y, xhat: (N, C, S); mean, var, invstd: (C).
  Tensor xr = read_as(cn.activations, x.contiguous().view({N, C, S}), draw_key(m, DrawSite::ReadInput));
  Tensor gamma = weight.defined() ? read_as(cn.weights, weight, wkey) : Tensor();
  Tensor beta = bias.defined() ? read_as(cn.weights, bias, nn_stage_key(wkey, 3)) : Tensor();
  Tensor mean, var;
  if (batch_stats) {
    mean = Tensor::zeros({C}, x.device());
    var = Tensor::zeros({C}, x.device());
    Tensor var_unbiased = Tensor::zeros({C}, x.device());
    be.batch_norm_stats(cn.mac, xr, mean, var, var_unbiased, nn_stage_key(fwd, 16));
    if (running_mean.defined() && running_var.defined())
      be.batch_norm_update_running(cn.out(), momentum, mean, var_unbiased, running_mean, running_var,
                                   nn_stage_key(fwd, 32));
  } else {
    // The running statistics play the part of weights here: read in the weights format.
    mean = read_as(cn.weights, running_mean, nn_stage_key(wkey, 1));
    var = read_as(cn.weights, running_var, nn_stage_key(wkey, 2));
  }
  Tensor y = Tensor::uninitialized({N, C, S}, x.device());  // batch_norm_normalize writes all three
  Tensor xhat = Tensor::uninitialized({N, C, S}, x.device());
  Tensor invstd = Tensor::uninitialized({C}, x.device());
  be.batch_norm_normalize(cn.out(), eps, xr, mean, var, gamma.defined() ? &gamma : nullptr,
                          beta.defined() ? &beta : nullptr, y, xhat, invstd, fwd);
  finish_output(n, y, fwd);
  Tensor result = y.view(x.shape());

  const Module* mp = &m;
  record_lambda(result, "batch_norm", {x, weight, bias}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_as(cn.grads, gy.contiguous().view({N, C, S}), draw_key(*mp, DrawSite::ReadGrad));
    Tensor gx, gw, gb;
    if (x.requires_grad()) gx = Tensor::uninitialized({N, C, S}, gy.device());  // every element written
    if (weight.defined() && weight.requires_grad()) gw = Tensor::zeros({C}, gy.device());
    if (bias.defined() && bias.requires_grad()) gb = Tensor::zeros({C}, gy.device());
    // g, xhat: (N, C, S), invstd, gamma: (C) -> gx: (N, C, S), ggamma, gbeta: (C).
    be.batch_norm_backward(backward_mac(cn), batch_stats, g, xhat, invstd, gamma.defined() ? &gamma : nullptr,
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
