#include "layers/softmax.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/autograd.h"
#include "layers/layer_io.h"

namespace emu {
namespace {

Tensor softmax_impl(const Module& m, const Tensor& x, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  if (x.ndim() < 1)
    throw std::invalid_argument(
        fmt::format("{}: {} needs at least one dimension, got a scalar", m.path(), op));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  const int64_t C = x.dim(-1), rows = C > 0 ? x.numel() / C : 0;

  // x: (rows, C) -> y: (rows, C)
  Tensor xr = read_as(cn.activations, x.contiguous().view({rows, C}), draw_key(m, DrawSite::ReadInput));
  Tensor y = Tensor::zeros({rows, C}, x.device());
  // softmax_exp: exact or pwl (exp's pieces) whatever the emulation mode; the
  // backward is the exact softmax's formula from y.
  be.softmax_forward_fn(cn.mac, log, n.function(Function::SoftmaxExp), xr, y, draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));
  Tensor result = y.view(x.shape());

  const Module* mp = &m;
  record_lambda(result, op, {x}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_as(cn.grads, gy.contiguous().view({rows, C}), draw_key(*mp, DrawSite::ReadGrad));
    Tensor gx = Tensor::zeros({rows, C}, gy.device());
    be.softmax_backward(backward_mac(cn), log, y, g, gx, draw_key(*mp, DrawSite::GradInput));
    finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
    return {gx.view(x.shape())};
  });
  return result;
}

}  // namespace

Tensor softmax(const Module& m, const Tensor& x) { return softmax_impl(m, x, false); }
Tensor log_softmax(const Module& m, const Tensor& x) { return softmax_impl(m, x, true); }

}  // namespace emu
