#include "core/sequence_checks.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "core/op_checks.h"

namespace emu {
namespace {

// The entries of a 1-D index tensor (`ndim` dimensions, shape `shape_text`,
// values row-major) as integers, each an exact integer in [0, S); else an error
// naming the position.
std::vector<int64_t> sequence_index(const char* op, const char* what, int ndim, const std::string& shape_text,
                                    const std::vector<float>& v, int64_t S) {
  if (ndim != 1) throw std::invalid_argument(fmt::format("{}: {} must be 1-D, got {}", op, what, shape_text));
  std::vector<int64_t> out(v.size());
  for (size_t p = 0; p < v.size(); ++p) {
    const float f = v[p];
    if (!(f >= 0.0f && f < static_cast<float>(S)) || static_cast<float>(static_cast<int64_t>(f)) != f)
      throw std::invalid_argument(
          fmt::format("{}: {}[{}] = {} is not an integer in [0, {})", op, what, p, f, S));
    out[p] = static_cast<int64_t>(f);
  }
  return out;
}

std::vector<int64_t> read_index(const char* op, const char* what, const Tensor& index, int64_t S) {
  return sequence_index(op, what, index.ndim(), shape_string(index.shape()), index.to_vector(), S);
}

// The layout of a temporal pool's x of shape xs.
TimeLayout time_layout(const char* op, int time_dim, const Shape& xs) {
  if (time_dim != 1 && time_dim != 2)
    throw std::invalid_argument(
        fmt::format("{}: time_dim must be 1 ((N, L, C)) or 2 ((N, C, L)), got {}", op, time_dim));
  if (xs.size() != 3)
    throw std::invalid_argument(
        fmt::format("{}: the input must have 3 dimensions, got {}", op, shape_string(xs)));
  TimeLayout t;
  t.time_dim = time_dim;
  t.N = xs[0];
  t.L = xs[static_cast<size_t>(time_dim)];
  t.C = xs[static_cast<size_t>(3 - time_dim)];
  return t;
}

// The valid steps from the (N, L) mask (its values read on the host), or every step.
Validity validity(const char* op, const TimeLayout& t, const Tensor* mask) {
  Validity v;
  v.valid.assign(static_cast<size_t>(t.N * t.L), 1);
  v.count.assign(static_cast<size_t>(t.N), t.L);
  if (mask) {
    check_shape(op, "mask", *mask, {t.N, t.L});
    const std::vector<float> m = mask->to_vector();
    for (int64_t n = 0; n < t.N; ++n) {
      v.count[n] = 0;
      for (int64_t s = 0; s < t.L; ++s) {
        v.valid[n * t.L + s] = m[n * t.L + s] != 0.0f;
        v.count[n] += v.valid[n * t.L + s];
      }
    }
  }
  for (int64_t n = 0; n < t.N; ++n)
    if (v.count[n] == 0) throw std::invalid_argument(fmt::format("{}: sequence {} has no valid step", op, n));
  return v;
}

}  // namespace

std::vector<int64_t> check_index_gather(const Tensor& index, const Tensor& x, const Tensor& y) {
  const char* op = "index_gather";
  if (x.ndim() != 3)
    throw std::invalid_argument(fmt::format("{}: x must be (A, S, B), got {}", op, shape_string(x.shape())));
  const int64_t A = x.dim(0), S = x.dim(1), B = x.dim(2);
  std::vector<int64_t> idx = read_index(op, "index", index, S);
  check_result(op, "y", y, {A, static_cast<int64_t>(idx.size()), B});
  return idx;
}

std::vector<int64_t> check_index_sum(const Tensor& index, const Tensor& src, const Tensor& dst) {
  const char* op = "index_sum";
  if (src.ndim() != 3 || dst.ndim() != 3)
    throw std::invalid_argument(fmt::format("{}: src {} and dst {} must be (A, P, B) and (A, S, B)", op,
                                            shape_string(src.shape()), shape_string(dst.shape())));
  const int64_t A = dst.dim(0), S = dst.dim(1), B = dst.dim(2);
  std::vector<int64_t> idx = read_index(op, "index", index, S);
  check_shape(op, "src", src, {A, static_cast<int64_t>(idx.size()), B});
  check_result(op, "dst", dst, {A, S, B});
  return idx;
}

TemporalPool check_temporal_avg_pool_forward(int time_dim, const Tensor& x, const Tensor* mask,
                                             const Tensor& y) {
  const char* op = "temporal_avg_pool_forward";
  const TimeLayout t = time_layout(op, time_dim, x.shape());
  check_result(op, "y", y, {t.N, t.C});
  return TemporalPool{t, validity(op, t, mask)};
}

TemporalPool check_temporal_avg_pool_backward(int time_dim, const Tensor& gy, const Tensor* mask,
                                              const Tensor& gx) {
  const char* op = "temporal_avg_pool_backward";
  const TimeLayout t = time_layout(op, time_dim, gx.shape());
  check_result(op, "gx", gx, t.x_shape());
  check_shape(op, "gy", gy, {t.N, t.C});
  return TemporalPool{t, validity(op, t, mask)};
}

TemporalPool check_temporal_max_pool_forward(int time_dim, const Tensor& x, const Tensor* mask,
                                             const Tensor& y, const Tensor& argmax) {
  const char* op = "temporal_max_pool_forward";
  const TimeLayout t = time_layout(op, time_dim, x.shape());
  // The argmax must stay below 2^24 (a binary32 integer).
  if (t.L >= (int64_t{1} << 24))
    throw std::invalid_argument(fmt::format("{}: {} steps: argmax indices must stay below 2^24", op, t.L));
  check_result(op, "y", y, {t.N, t.C});
  check_result(op, "argmax", argmax, {t.N, t.C});
  return TemporalPool{t, validity(op, t, mask)};
}

TemporalMaxGrad check_temporal_max_pool_backward(int time_dim, const Tensor& gy, const Tensor& argmax,
                                                 const Tensor& gx) {
  const char* op = "temporal_max_pool_backward";
  const TimeLayout t = time_layout(op, time_dim, gx.shape());
  check_result(op, "gx", gx, t.x_shape());
  check_shape(op, "gy", gy, {t.N, t.C});
  check_shape(op, "argmax", argmax, {t.N, t.C});
  // argmax (N,C) read as the N*C steps of a 1-D index.
  return TemporalMaxGrad{t,
                         sequence_index(op, "argmax", 1, shape_string({t.N * t.C}), argmax.to_vector(), t.L)};
}

}  // namespace emu
