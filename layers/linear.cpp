#include "layers/linear.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/autograd.h"
#include "layers/init.h"
#include "layers/layer_io.h"

namespace emu {

Linear::Linear(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  if (in <= 0 || out <= 0) throw std::invalid_argument(fmt::format("Linear({}, {}): sizes must be positive", in, out));
  weight = register_parameter("weight", Tensor::zeros({out, in}));
  if (with_bias) bias = register_parameter("bias", Tensor::zeros({out}));
}

void Linear::reset_parameters() {
  float bound = 1.0f / std::sqrt(static_cast<float>(in_features));
  init_uniform(*this, weight, bound, 0);
  if (bias.defined()) init_uniform(*this, bias, bound, 1);
}

Tensor Linear::forward(const Tensor& x) { return linear(*this, x, weight, bias); }

Tensor linear(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const int64_t in = weight.dim(1), out = weight.dim(0);
  if (x.ndim() < 1 || x.dim(-1) != in)
    throw std::invalid_argument(fmt::format("{}: input of shape {} does not end in {} features", m.path(),
                                            shape_string(x.shape()), in));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  const int64_t rows = x.numel() / in;

  // x: (rows, in), w: (out, in) -> y: (rows, out), reduction over k = in-feature.
  Tensor xr = read_as(cn.activations, x.contiguous().view({rows, in}), draw_key(m, DrawSite::ReadInput));
  Tensor wr = read_as(cn.weights, weight, draw_key(m, DrawSite::ReadWeights));
  Tensor br = bias.defined() ? read_as(cn.weights, bias, draw_key(m, DrawSite::ReadBias)) : Tensor();
  Tensor wt = wr.transpose(0, 1).contiguous();  // (in, out)
  Tensor y = Tensor::zeros({rows, out}, x.device());
  be.gemm(cn.mac, xr, wt, br.defined() ? &br : nullptr, y, draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));

  Shape y_shape = x.shape();
  y_shape.back() = out;
  Tensor result = y.view(y_shape);

  const Module* mp = &m;
  record_lambda(result, "linear", {x, weight, bias}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_as(cn.grads, gy.contiguous().view({rows, out}), draw_key(*mp, DrawSite::ReadGrad));
    Tensor gx, gw, gb;
    if (x.requires_grad()) {
      // g: (rows, out), w: (out, in) -> gx: (rows, in), reduction over the out-feature.
      gx = Tensor::zeros({rows, in}, gy.device());
      be.gemm(backward_mac(cn), g, wr, nullptr, gx, draw_key(*mp, DrawSite::GradInput));
      finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
      gx = gx.view(x.shape());
    }
    Tensor gt = g.transpose(0, 1).contiguous();  // (out, rows)
    if (weight.requires_grad()) {
      // g^T: (out, rows), x: (rows, in) -> gw: (out, in), reduction over the batch rows.
      gw = Tensor::zeros({out, in}, gy.device());
      be.gemm(backward_mac(cn), gt, xr, nullptr, gw, draw_key(*mp, DrawSite::GradWeight));
      finish_grad(n, gw, draw_key(*mp, DrawSite::GradWeight));
    }
    if (bias.defined() && bias.requires_grad()) {
      // g^T: (out, rows) x ones: (rows, 1) -> gb: (out, 1), a plain sum over the rows.
      Tensor gb2 = Tensor::zeros({out, 1}, gy.device());
      be.gemm(sum_mac(cn), gt, Tensor::full({rows, 1}, 1.0f), nullptr, gb2, draw_key(*mp, DrawSite::GradBias));
      finish_grad(n, gb2, draw_key(*mp, DrawSite::GradBias));
      gb = gb2.view({out});
    }
    return {gx, gw, gb};
  });
  return result;
}

}  // namespace emu
