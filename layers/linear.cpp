#include "layers/linear.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/autograd.h"
#include "core/comm_reduce.h"
#include "layers/init.h"
#include "layers/layer_io.h"

namespace emu {

Linear::Linear(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  if (in <= 0 || out <= 0)
    throw std::invalid_argument(fmt::format("Linear({}, {}): sizes must be positive", in, out));
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
  Tensor wr = read_weight(m, cn, weight, draw_key(m, DrawSite::ReadWeights), ReadLayout{out, in, 1});
  Tensor br = bias.defined() ? read_as(cn.weights, bias, draw_key(m, DrawSite::ReadBias)) : Tensor();
  Tensor wt = wr.transpose(0, 1).contiguous();  // (in, out)
  Tensor y = Tensor::zeros({rows, out}, x.device());
  be.gemm(cn.mac, xr, wt, br.defined() ? &br : nullptr, y, draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));
  hook_output(m, n, y);

  Shape y_shape = x.shape();
  y_shape.back() = out;
  Tensor result = y.view(y_shape);

  const Module* mp = &m;
  record_lambda(result, "linear", {x, weight, bias}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_grad(*mp, cn, gy.contiguous().view({rows, out}), draw_key(*mp, DrawSite::ReadGrad),
                         ReadLayout{rows, out, 1});
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
      // Split by rank shares of the rows under data parallelism (core/comm_reduce.h).
      gw = Tensor::zeros({out, in}, gy.device());
      const DrawKey key = draw_key(*mp, DrawSite::GradWeight);
      reduce_over_rows(
          backward_mac(cn), rows, gw, mp->path() + " grad-weight",
          [&](const MacPolicy& p, int64_t k0, int64_t k1, Tensor& o) {
            Tensor a = k0 == 0 && k1 == rows ? gt : g.narrow(0, k0, k1 - k0).transpose(0, 1).contiguous();
            be.gemm(p, a, k0 == 0 && k1 == rows ? xr : xr.narrow(0, k0, k1 - k0), nullptr, o, key);
          });
      finish_grad(n, gw, key);
    }
    if (bias.defined() && bias.requires_grad()) {
      // g^T: (out, rows) x ones: (rows, 1) -> gb: (out, 1), a plain sum over the rows.
      Tensor gb2 = Tensor::zeros({out, 1}, gy.device());
      const DrawKey key = draw_key(*mp, DrawSite::GradBias);
      reduce_over_rows(
          sum_mac(cn), rows, gb2, mp->path() + " bias-grad",
          [&](const MacPolicy& p, int64_t k0, int64_t k1, Tensor& o) {
            Tensor a = k0 == 0 && k1 == rows ? gt : g.narrow(0, k0, k1 - k0).transpose(0, 1).contiguous();
            be.gemm(p, a, Tensor::full({k1 - k0, 1}, 1.0f, gy.device()), nullptr, o, key);
          });
      finish_grad(n, gb2, key);
      gb = gb2.view({out});
    }
    return {gx, gw, gb};
  });
  return result;
}

}  // namespace emu
