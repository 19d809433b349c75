#include "layers/temporal_pool.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "core/autograd.h"
#include "layers/layer_io.h"

namespace emu {
namespace {

int check_dim(const char* what, int dim) {
  if (dim == -1) dim = 2;
  if (dim != 1 && dim != 2)
    throw std::invalid_argument(
        fmt::format("{}: dim must be 2 (or -1) for (N, C, L) or 1 for (N, L, C), got {}", what, dim));
  return dim;
}

// The time dimension of x; checks x and the mask.
int time_dim(const Module& m, const Tensor& x, int dim, const Tensor& mask) {
  const int d = check_dim(m.path().c_str(), dim);
  if (x.ndim() != 3)
    throw std::invalid_argument(fmt::format("{}: input of shape {} is not {}", m.path(),
                                            shape_string(x.shape()), d == 2 ? "(N, C, L)" : "(N, L, C)"));
  if (mask.defined() && mask.shape() != Shape{x.dim(0), x.dim(d)})
    throw std::invalid_argument(fmt::format("{}: mask of shape {} does not fit input {} (want ({}, {}))",
                                            m.path(), shape_string(mask.shape()), shape_string(x.shape()),
                                            x.dim(0), x.dim(d)));
  return d;
}

}  // namespace

Tensor lengths_mask(const Tensor& lengths, int64_t L) {
  if (lengths.ndim() != 1)
    throw std::invalid_argument(
        fmt::format("lengths_mask: lengths must be 1-D, got {}", shape_string(lengths.shape())));
  const std::vector<float> len = lengths.to_vector();
  const int64_t N = static_cast<int64_t>(len.size());
  std::vector<float> mask(static_cast<size_t>(N * L), 0.0f);
  for (int64_t n = 0; n < N; ++n) {
    const float v = len[n];
    if (!(v >= 0.0f && v <= static_cast<float>(L)) || static_cast<float>(static_cast<int64_t>(v)) != v)
      throw std::invalid_argument(
          fmt::format("lengths_mask: lengths[{}] = {} is not an integer in [0, {}]", n, v, L));
    for (int64_t t = 0; t < static_cast<int64_t>(v); ++t) mask[n * L + t] = 1.0f;
  }
  return Tensor::from_vector({N, L}, mask, lengths.device());
}

TemporalAvgPool::TemporalAvgPool(int d) : dim(check_dim("TemporalAvgPool", d)) {}
TemporalMaxPool::TemporalMaxPool(int d) : dim(check_dim("TemporalMaxPool", d)) {}

Tensor temporal_avg_pool(const Module& m, const Tensor& x, int dim, const Tensor& mask) {
  const int td = time_dim(m, x, dim, mask);
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  const Tensor mk = mask.defined() ? mask.contiguous().clone() : Tensor();  // kept for the backward
  // x: (N, C, L) or (N, L, C) -> y: (N, C).
  Tensor xr = read_as(cn.activations, x.contiguous(), draw_key(m, DrawSite::ReadInput));
  Tensor y = Tensor::zeros({x.dim(0), x.dim(3 - td)}, x.device());
  be.temporal_avg_pool_forward(cn.mac, td, xr, mk.defined() ? &mk : nullptr, y,
                               draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));

  const Module* mp = &m;
  record_lambda(y, "temporal_avg_pool", {x}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad));
    // g: (N, C) -> gx: x's shape.
    Tensor gx = Tensor::zeros(x.shape(), gy.device());
    backend_for(gy.device())
        .temporal_avg_pool_backward(backward_mac(cn), td, g, mk.defined() ? &mk : nullptr, gx,
                                    draw_key(*mp, DrawSite::GradInput));
    finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
    return {gx};
  });
  return y;
}

Tensor temporal_max_pool(const Module& m, const Tensor& x, int dim, const Tensor& mask) {
  const int td = time_dim(m, x, dim, mask);
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  // x: (N, C, L) or (N, L, C) -> y, argmax: (N, C).
  Tensor xr = read_as(cn.activations, x.contiguous(), draw_key(m, DrawSite::ReadInput));
  const Shape out_shape = {x.dim(0), x.dim(3 - td)};
  Tensor y = Tensor::zeros(out_shape, x.device());
  Tensor argmax = Tensor::zeros(out_shape, x.device());
  be.temporal_max_pool_forward(cn.out(), td, xr, mask.defined() ? &mask : nullptr, y, argmax,
                               draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));

  const Module* mp = &m;
  record_lambda(y, "temporal_max_pool", {x}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad));
    // g, argmax: (N, C) -> gx: x's shape.
    Tensor gx = Tensor::zeros(x.shape(), gy.device());
    backend_for(gy.device())
        .temporal_max_pool_backward(backward_mac(cn), td, g, argmax, gx, draw_key(*mp, DrawSite::GradInput));
    finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
    return {gx};
  });
  return y;
}

}  // namespace emu
