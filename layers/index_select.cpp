#include "layers/index_select.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "core/autograd.h"
#include "layers/layer_io.h"

namespace emu {
namespace {

// x viewed as (A, S, B) -> y (A, P, B) viewed as y_shape: rows index[p] of each of the A blocks, moved
// without rounding; the backward scatter-sums g into those rows under m's numerics.
Tensor select_rows(const Module& m, const char* op, const Tensor& x, int64_t A, int64_t S, int64_t B,
                   const Tensor& index, const Shape& y_shape) {
  const int64_t P = index.numel();
  Backend& be = backend_for(x.device());
  Tensor y = Tensor::zeros({A, P, B}, x.device());
  be.index_gather(Format{}, index, x.contiguous().view({A, S, B}), y, DrawKey{});  // fp32: a copy
  Tensor result = y.view(y_shape);

  const Module* mp = &m;
  record_lambda(result, op, {x}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad)).view({A, P, B});
    // g (A, P, B) -> gx (A, S, B): the sum over the positions that picked each row, ascending.
    Tensor gx = Tensor::zeros({A, S, B}, gy.device());
    be.index_sum(sum_mac(cn), index, -1, g, gx, draw_key(*mp, DrawSite::GradInput));
    finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
    return {gx.view(x.shape())};
  });
  return result;
}

// The values of a 1-D tensor of N exact integers in [lo, hi] (downloaded: they are checked and
// turned into row numbers on the host).
std::vector<int64_t> integers(const Module& m, const char* what, const Tensor& t, int64_t N, int64_t lo,
                              int64_t hi) {
  if (t.ndim() != 1 || t.dim(0) != N)
    throw std::invalid_argument(
        fmt::format("{}: {} has shape {}, want ({})", m.path(), what, shape_string(t.shape()), N));
  std::vector<int64_t> out;
  for (float v : t.to_vector()) {
    if (!(v >= static_cast<float>(lo) && v <= static_cast<float>(hi)) ||
        static_cast<float>(static_cast<int64_t>(v)) != v)
      throw std::invalid_argument(fmt::format("{}: {}[{}] = {} is not an integer in [{}, {}]", m.path(), what,
                                              out.size(), v, lo, hi));
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

}  // namespace

Tensor index_select(const Module& m, const Tensor& x, int dim, const Tensor& index) {
  const int nd = x.ndim();
  const int d = dim < 0 ? dim + nd : dim;
  if (d < 0 || d >= nd)
    throw std::invalid_argument(fmt::format("{}: dim {} out of range for an input of shape {}", m.path(), dim,
                                            shape_string(x.shape())));
  if (index.ndim() != 1)
    throw std::invalid_argument(
        fmt::format("{}: index must be 1-D, got {}", m.path(), shape_string(index.shape())));
  int64_t A = 1, B = 1;
  for (int i = 0; i < d; ++i) A *= x.dim(i);
  for (int i = d + 1; i < nd; ++i) B *= x.dim(i);
  Shape y_shape = x.shape();
  y_shape[static_cast<size_t>(d)] = index.numel();
  // The op reads the index on x's device: a host-made index is uploaded (a copy either way, so a
  // later change of the caller's tensor cannot reach the backward).
  const Tensor idx = index.device() == x.device() ? index.clone() : index.to(x.device());
  return select_rows(m, "index_select", x, A, x.dim(d), B, idx, y_shape);
}

Tensor gather_rows(const Module& m, const Tensor& x, const Tensor& positions, int time_dim) {
  if ((time_dim != 0 && time_dim != 1) || x.ndim() < 2)
    throw std::invalid_argument(
        fmt::format("{}: gather_rows takes x (N, T, ...) with time_dim 1 or (T, N, ...) with "
                    "time_dim 0, got x {} and time_dim {}",
                    m.path(), shape_string(x.shape()), time_dim));
  const int64_t T = x.dim(time_dim), N = x.dim(1 - time_dim);
  if (N * T >= (int64_t{1} << 24))
    throw std::invalid_argument(
        fmt::format("{}: {} x {} steps: row indices must stay below 2^24", m.path(), N, T));
  const std::vector<int64_t> pos = integers(m, "positions", positions, N, 0, T - 1);
  // Row of x viewed as (N*T, rest) or (T*N, rest).
  std::vector<float> flat(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n)
    flat[n] = static_cast<float>(time_dim == 1 ? n * T + pos[n] : pos[n] * N + n);
  Shape y_shape = {N};
  int64_t B = 1;
  for (int i = 2; i < x.ndim(); ++i) {
    y_shape.push_back(x.dim(i));
    B *= x.dim(i);
  }
  return select_rows(m, "gather_rows", x, 1, N * T, B, Tensor::from_vector({N}, flat, x.device()), y_shape);
}

Tensor last_valid_step(const Module& m, const Tensor& x, const Tensor& lengths, int time_dim) {
  if ((time_dim != 0 && time_dim != 1) || x.ndim() < 2)
    throw std::invalid_argument(
        fmt::format("{}: last_valid_step takes x (N, T, ...) with time_dim 1 or (T, N, ...) "
                    "with time_dim 0, got x {} and time_dim {}",
                    m.path(), shape_string(x.shape()), time_dim));
  const int64_t T = x.dim(time_dim), N = x.dim(1 - time_dim);
  const std::vector<int64_t> len = integers(m, "lengths", lengths, N, 1, T);
  std::vector<float> pos(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) pos[n] = static_cast<float>(len[n] - 1);
  return gather_rows(m, x, Tensor::from_vector({N}, pos, x.device()), time_dim);
}

}  // namespace emu
