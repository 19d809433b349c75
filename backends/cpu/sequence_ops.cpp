// The sequence ops on the CPU: index_gather / index_sum (Embedding,
// index_select, step picking) and the temporal pools.
// core/backend_ops_sequence.h states what each computes; docs/layers_sequence.md
// explains the choices. (Conv1d runs the Conv2d ops, backends/cpu/conv_ops.cpp.)
//
// Sums use the Reducer of reduce_arith.h (binary32 additions for plain fp32, the
// fast IEEE kernel or mac_reduce otherwise), so nothing depends on the thread count.
// The roundings around them, the one-term sums of the backward passes and the
// argument checks are numerics/sequence_steps.h's, shared with the CUDA kernels.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/op_checks.h"
#include "backends/cpu/reduce_arith.h"
#include "backends/cpu/row_ops.h"
#include "numerics/philox.h"
#include "numerics/sequence_steps.h"
#include "numerics/stage_round.h"

namespace emu {
namespace {

using cpu_checks::check_result;
using cpu_checks::check_shape;
using cpu_rows::row_grain;

using namespace cpu_reduce;  // NOLINT: the shared helpers of reduce_arith.h

// The entries of a 1-D index tensor as integers, each an exact integer in [0, S).
std::vector<int64_t> read_index(const char* op, const char* what, const Tensor& index, int64_t S) {
  return sequence_index(op, what, index.ndim(), shape_string(index.shape()), index.to_vector(), S);
}

TimeLayout layout_of(const char* op, int time_dim, const Shape& xs) {
  return time_layout(op, time_dim, xs, shape_string(xs));
}

Validity validity_of(const char* op, const TimeLayout& t, const Tensor* mask) {
  if (!mask) return validity(op, t, nullptr);
  check_shape(op, "mask", *mask, {t.N, t.L});
  const std::vector<float> m = mask->to_vector();
  return validity(op, t, &m);
}

}  // namespace

// ---------------------------------------------------------------------------
// Gathers and scatter-sums

// index (P), x (A,S,B) -> y (A,P,B)
void CpuBackend::index_gather(const Format& out, const Tensor& index, const Tensor& x, Tensor& y,
                              DrawKey key) {
  const char* op = "index_gather";
  if (x.ndim() != 3)
    throw std::invalid_argument(fmt::format("{}: x must be (A, S, B), got {}", op, shape_string(x.shape())));
  const int64_t A = x.dim(0), S = x.dim(1), B = x.dim(2);
  const std::vector<int64_t> idx = read_index(op, "index", index, S);
  const int64_t P = static_cast<int64_t>(idx.size());
  check_result(op, "y", y, {A, P, B});
  const Tensor X = x.contiguous();
  const float* xp = X.data();
  float* yp = y.data();
  const bool copy = is_plain_fp32(out);
  const StageRound r(out, key.seed, key.stream);  // stage 0
  parallel_for(A * P, threads_, row_grain(B), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const float* src = xp + (row / P * S + idx[row % P]) * B;
      float* dst = yp + row * B;
      if (copy) {
        std::copy_n(src, B, dst);
        continue;
      }
      for (int64_t b = 0; b < B; ++b) dst[b] = r.round(src[b], static_cast<uint64_t>(row * B + b));
    }
  });
}

// index (P), src (A,P,B) -> dst (A,S,B)
void CpuBackend::index_sum(const MacPolicy& p, const Tensor& index, int64_t skip, const Tensor& src,
                           Tensor& dst, DrawKey key) {
  const char* op = "index_sum";
  if (src.ndim() != 3 || dst.ndim() != 3)
    throw std::invalid_argument(fmt::format("{}: src {} and dst {} must be (A, P, B) and (A, S, B)", op,
                                            shape_string(src.shape()), shape_string(dst.shape())));
  const int64_t A = dst.dim(0), S = dst.dim(1), B = dst.dim(2);
  const std::vector<int64_t> idx = read_index(op, "index", index, S);
  const int64_t P = static_cast<int64_t>(idx.size());
  check_shape(op, "src", src, {A, P, B});
  check_result(op, "dst", dst, {A, S, B});
  // The positions of each s, ascending (a stable counting sort).
  std::vector<int64_t> first(static_cast<size_t>(S + 1), 0), order(static_cast<size_t>(P));
  for (int64_t i : idx) ++first[i + 1];
  for (int64_t s = 0; s < S; ++s) first[s + 1] += first[s];
  {
    std::vector<int64_t> next(first.begin(), first.end() - 1);
    for (int64_t pos = 0; pos < P; ++pos) order[next[idx[pos]]++] = pos;
  }
  const Tensor SRC = src.contiguous();
  const float* sp = SRC.data();
  float* dp = dst.data();
  const bool fast = sequence_fp32_sum(p);
  const bool native_out = is_plain_fp32(p.out);
  const Reducer sum(p, true, fast ? 0 : P);
  const Round out(p.out);
  const SequenceSumResult result(p, key.seed, key.stream);
  const uint64_t sites = mac_site_count(P, p.chunk);
  parallel_for(A * S, threads_, row_grain(B), [&](int64_t r0, int64_t r1) {
    std::vector<float> acc(static_cast<size_t>(B)), terms(static_cast<size_t>(fast ? 0 : P));
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t a = row / S, s = row % S;
      float* d = dp + row * B;
      const int64_t k0 = first[s], k1 = s == skip ? k0 : first[s + 1];
      if (fast) {
        // Binary32 additions from +0 in ascending position: R_fp32 of each exact partial sum.
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t k = k0; k < k1; ++k) {
          const float* g = sp + (a * P + order[k]) * B;
          for (int64_t b = 0; b < B; ++b) acc[b] = acc[b] + g[b];
        }
        for (int64_t b = 0; b < B; ++b)
          d[b] = native_out ? canonical(acc[b]) : static_cast<float>(out(acc[b], 0));
        continue;
      }
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t k = k0; k < k1; ++k) terms[k - k0] = sp[(a * P + order[k]) * B + b];
        const uint64_t o = static_cast<uint64_t>(row * B + b);
        const double v = sum.run(terms.data(), nullptr, k1 - k0, key, o, sites);
        d[b] = result(v, k1 - k0, o, sites);
      }
    }
  });
}

// ---------------------------------------------------------------------------
// Temporal pools

// x (N,C,L) or (N,L,C), mask (N,L) or null -> y (N,C)
void CpuBackend::temporal_avg_pool_forward(const MacPolicy& p, int time_dim, const Tensor& x,
                                           const Tensor* mask, Tensor& y, DrawKey key) {
  const char* op = "temporal_avg_pool_forward";
  const TimeLayout t = layout_of(op, time_dim, x.shape());
  check_result(op, "y", y, {t.N, t.C});
  const Validity v = validity_of(op, t, mask);
  const Tensor X = x.contiguous();
  const float* xp = X.data();
  float* yp = y.data();
  const Reducer sum(p, true, t.L);
  const StageRound quotient(p.out, key.seed, key.stream + 1);
  const uint64_t sites = mac_site_count(t.L, p.chunk);
  if (time_dim == 1 && sequence_fp32_sum(p)) {
    // (N, L, C) in plain binary32: one running sum per channel, the steps ascending (vectorised over c).
    parallel_for(t.N, threads_, 1, [&](int64_t n0, int64_t n1) {
      std::vector<float> acc(static_cast<size_t>(t.C));
      for (int64_t n = n0; n < n1; ++n) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t s = 0; s < t.L; ++s) {
          if (!v.valid[n * t.L + s]) continue;
          const float* row = xp + (n * t.L + s) * t.C;
          for (int64_t c = 0; c < t.C; ++c) acc[c] = acc[c] + row[c];
        }
        const double cnt = static_cast<double>(v.count[n]);
        for (int64_t c = 0; c < t.C; ++c)
          yp[n * t.C + c] = quotient.div(acc[c], cnt, static_cast<uint64_t>(n * t.C + c));
      }
    });
    return;
  }
  parallel_for(t.N * t.C, threads_, 16, [&](int64_t o0, int64_t o1) {
    std::vector<float> terms(static_cast<size_t>(t.L));
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t n = o / t.C, c = o % t.C;
      const float* xs = xp + t.base(n, c);
      int64_t k = 0;
      for (int64_t s = 0; s < t.L; ++s)
        if (v.valid[n * t.L + s]) terms[k++] = xs[s * t.step()];
      const double S = sum.run(terms.data(), nullptr, k, key, static_cast<uint64_t>(o), sites);
      yp[o] = quotient.div(S, static_cast<double>(k), static_cast<uint64_t>(o));
    }
  });
}

// gy (N,C), mask (N,L) or null -> gx (N,C,L) or (N,L,C)
void CpuBackend::temporal_avg_pool_backward(const MacPolicy& p, int time_dim, const Tensor& gy,
                                            const Tensor* mask, Tensor& gx, DrawKey key) {
  const char* op = "temporal_avg_pool_backward";
  const TimeLayout t = layout_of(op, time_dim, gx.shape());
  check_result(op, "gx", gx, t.x_shape());
  check_shape(op, "gy", gy, {t.N, t.C});
  const Validity v = validity_of(op, t, mask);
  const std::vector<float> g = gy.to_vector();
  std::vector<float> q(g.size());
  const StageRound quotient(p.out, key.seed, key.stream);  // stage 0
  for (int64_t o = 0; o < t.N * t.C; ++o)
    q[o] = quotient.div(g[o], static_cast<double>(v.count[o / t.C]), static_cast<uint64_t>(o));
  // Every input step is covered by exactly one output: a sum of one term (site stride K = 1).
  const OneTermSum one(p, key.seed, key.stream + 1);
  float* xp = gx.data();
  parallel_for(t.N * t.L, threads_, row_grain(t.C), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / t.L, s = r % t.L;
      const bool valid = v.valid[r];
      for (int64_t c = 0; c < t.C; ++c) {
        const int64_t i = t.base(n, c) + s * t.step();
        if (!valid) {
          xp[i] = 0.0f;
          continue;
        }
        xp[i] = one(q[n * t.C + c], static_cast<uint64_t>(i));
      }
    }
  });
}

// x (N,C,L) or (N,L,C), mask (N,L) or null -> y (N,C), argmax (N,C)
void CpuBackend::temporal_max_pool_forward(const Format& out, int time_dim, const Tensor& x,
                                           const Tensor* mask, Tensor& y, Tensor& argmax, DrawKey key) {
  const char* op = "temporal_max_pool_forward";
  const TimeLayout t = layout_of(op, time_dim, x.shape());
  check_time_steps(op, t);
  check_result(op, "y", y, {t.N, t.C});
  check_result(op, "argmax", argmax, {t.N, t.C});
  const Validity v = validity_of(op, t, mask);
  const Tensor X = x.contiguous();
  const float* xp = X.data();
  float* yp = y.data();
  float* ap = argmax.data();
  const StageRound r(out, key.seed, key.stream);  // stage 0
  parallel_for(t.N * t.C, threads_, 64, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t n = o / t.C, c = o % t.C;
      const float* xs = xp + t.base(n, c);
      float best = 0.0f;
      int64_t at = -1;
      for (int64_t s = 0; s < t.L; ++s) {
        if (!v.valid[n * t.L + s]) continue;
        const float val = xs[s * t.step()];
        if (max_step_takes(at >= 0, best, val)) {
          best = val;
          at = s;
        }
      }
      yp[o] = r.round(best, static_cast<uint64_t>(o));
      ap[o] = static_cast<float>(at);
    }
  });
}

// gy (N,C), argmax (N,C) -> gx (N,C,L) or (N,L,C)
void CpuBackend::temporal_max_pool_backward(const MacPolicy& p, int time_dim, const Tensor& gy,
                                            const Tensor& argmax, Tensor& gx, DrawKey key) {
  const char* op = "temporal_max_pool_backward";
  const TimeLayout t = layout_of(op, time_dim, gx.shape());
  check_result(op, "gx", gx, t.x_shape());
  check_shape(op, "gy", gy, {t.N, t.C});
  check_shape(op, "argmax", argmax, {t.N, t.C});
  const std::vector<float> g = gy.to_vector();
  const std::vector<int64_t> am = read_index(op, "argmax", argmax.contiguous().view({t.N * t.C}), t.L);
  const OneTermSum one(p, key.seed, key.stream);
  float* xp = gx.data();
  parallel_for(t.N * t.L, threads_, row_grain(t.C), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / t.L, s = r % t.L;
      for (int64_t c = 0; c < t.C; ++c) {
        const int64_t o = n * t.C + c, i = t.base(n, c) + s * t.step();
        // The one covering output's term: its gradient where it took its maximum here, else a zero operand.
        xp[i] = one(am[o] == s ? g[o] : 0.0f, static_cast<uint64_t>(i));
      }
    }
  });
}

}  // namespace emu
