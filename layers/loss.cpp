#include "layers/loss.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/autograd.h"
#include "layers/layer_io.h"
#include "numerics/round.h"

namespace emu {
namespace {

void check_options(const CrossEntropyOptions& o) {
  if (!(o.label_smoothing >= 0.0f && o.label_smoothing <= 1.0f))
    throw std::invalid_argument(
        fmt::format("cross_entropy: label_smoothing = {} is not in [0, 1]", o.label_smoothing));
}

}  // namespace

SmoothingWeights smoothing_weights(const Format& f, float eps, int64_t classes) {
  if (eps == 0.0f) return {1.0f, 0.0f};
  // Host-side constants: rounded to nearest in f's family even under :sr, so
  // that both passes and every backend use the same weights.
  Format g = f;
  if (is_stochastic(g)) g.rounding = Rounding::NearestEven;
  const float off = static_cast<float>(format_div(g, eps, static_cast<double>(classes)));
  const float keep = static_cast<float>(format_sub(g, 1.0, eps));
  return {static_cast<float>(format_add(g, keep, off)), off};
}

CrossEntropyLoss::CrossEntropyLoss(CrossEntropyOptions o) : options(o) { check_options(options); }

Tensor cross_entropy(const Module& m, const Tensor& logits, const Tensor& targets,
                     const CrossEntropyOptions& o) {
  check_options(o);
  if (logits.ndim() != 2)
    throw std::invalid_argument(
        fmt::format("{}: cross_entropy wants logits (N, C), got {}", m.path(), shape_string(logits.shape())));
  if (targets.ndim() != 1 || targets.dim(0) != logits.dim(0))
    throw std::invalid_argument(fmt::format("{}: cross_entropy targets {} for logits {} (want (N,))",
                                            m.path(), shape_string(targets.shape()),
                                            shape_string(logits.shape())));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(logits.device());
  const int64_t N = logits.dim(0), C = logits.dim(1);
  const SmoothingWeights q = smoothing_weights(cn.out(), o.label_smoothing, C);

  Tensor xr = read_as(cn.activations, logits.contiguous(), draw_key(m, DrawSite::ReadInput));
  Tensor logp = Tensor::zeros({N, C}, logits.device());
  Tensor loss = Tensor::zeros({}, logits.device());
  be.cross_entropy_forward(cn.mac, xr, targets, o.ignore_index, q.on, q.off, logp, loss,
                           draw_key(m, DrawSite::Forward));
  finish_output(n, loss, draw_key(m, DrawSite::Forward));
  Tensor result = loss.view({});

  const Module* mp = &m;
  record_lambda(result, "cross_entropy", {logits}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad));
    Tensor gx = Tensor::zeros({N, C}, gy.device());
    be.cross_entropy_backward(cn.grads, logp, targets, o.ignore_index, q.on, q.off, g, gx,
                              draw_key(*mp, DrawSite::GradInput));
    finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
    return {gx};
  });
  return result;
}

Tensor cross_entropy(const Module& m, const Tensor& logits, const std::vector<int64_t>& targets,
                     const CrossEntropyOptions& o) {
  std::vector<float> t(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    const int64_t v = targets[i];
    if (v != static_cast<int64_t>(static_cast<float>(v)))
      throw std::invalid_argument(
          fmt::format("{}: cross_entropy target {} does not fit a float exactly", m.path(), v));
    t[i] = static_cast<float>(v);
  }
  // Host-made targets go to the logits' device.
  return cross_entropy(m, logits, Tensor::from_vector({static_cast<int64_t>(t.size())}, t, logits.device()),
                       o);
}

Tensor mse_loss(const Module& m, const Tensor& x, const Tensor& target) {
  if (x.shape() != target.shape())
    throw std::invalid_argument(fmt::format("{}: mse_loss of input {} and target {} (no broadcasting)",
                                            m.path(), shape_string(x.shape()), shape_string(target.shape())));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  const DrawKey read_x = draw_key(m, DrawSite::ReadInput);
  Tensor xr = read_as(cn.activations, x.contiguous(), read_x);
  Tensor tr = read_as(cn.activations, target.contiguous(), DrawKey{read_x.seed, read_x.stream + 1});
  Tensor diff = Tensor::zeros(x.shape(), x.device());
  Tensor loss = Tensor::zeros({}, x.device());
  be.mse_forward(cn.mac, xr, tr, diff, loss, draw_key(m, DrawSite::Forward));
  finish_output(n, loss, draw_key(m, DrawSite::Forward));
  Tensor result = loss.view({});

  const Module* mp = &m;
  record_lambda(result, "mse_loss", {x, target}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad));
    const DrawKey key = draw_key(*mp, DrawSite::GradInput);
    Tensor gx = Tensor::zeros(x.shape(), gy.device());
    Tensor gt = target.requires_grad() ? Tensor::zeros(x.shape(), gy.device()) : Tensor();
    be.mse_backward(cn.grads, diff, g, gx, gt.defined() ? &gt : nullptr, key);
    finish_grad(n, gx, key);
    finish_grad(n, gt, DrawKey{key.seed, key.stream + 1});
    return {gx, gt};
  });
  return result;
}

}  // namespace emu
