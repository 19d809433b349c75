#include "layers/dropout.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/autograd.h"
#include "layers/layer_io.h"
#include "numerics/philox.h"
#include "numerics/round.h"

namespace emu {
namespace {

void check_p(float p) {
  if (!(p >= 0.0f && p <= 1.0f))
    throw std::invalid_argument(fmt::format("Dropout: p = {} is not in [0, 1]", p));
}

// The scale's own rounding draws at index 0 of the stream after the op's site 0.
float scale_for(const Format& f, float p, DrawKey round_key) {
  return dropout_scale(f, p, is_stochastic(f) ? philox_draw(round_key.seed, round_key.stream + 1, 0) : 0u);
}

}  // namespace

Dropout::Dropout(float p_) : p(p_) { check_p(p); }

float dropout_scale(const Format& f, float p, uint32_t rand) {
  check_p(p);
  if (p >= 1.0f) return 0.0f;
  return static_cast<float>(format_div(f, 1.0, 1.0 - static_cast<double>(p), rand));
}

Tensor dropout(const Module& m, const Tensor& x, float p, bool training) {
  check_p(p);
  if (!training) return x;
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  // The mask key is taken once, here, so that backward drops the same elements
  // even if the step advances before it runs.
  const DrawKey mask_key = draw_key(m, DrawSite::Dropout);
  const DrawKey fwd_key = draw_key(m, DrawSite::Forward);
  Tensor xr = read_as(cn.activations, x.contiguous(), draw_key(m, DrawSite::ReadInput));
  Tensor y = Tensor::zeros(x.shape(), x.device());
  be.dropout(p, scale_for(cn.out(), p, fwd_key), cn.out(), xr, y, mask_key, fwd_key);
  finish_output(n, y, fwd_key);
  Tensor result = y.view(x.shape());

  const Module* mp = &m;
  record_lambda(result, "dropout", {x}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    const DrawKey key = draw_key(*mp, DrawSite::GradInput);
    Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad));
    Tensor gx = Tensor::zeros(x.shape(), gy.device());
    be.dropout(p, scale_for(cn.grads, p, key), cn.grads, g, gx, mask_key, key);
    finish_grad(n, gx, key);
    return {gx};
  });
  return result;
}

}  // namespace emu
