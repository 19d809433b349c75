// The sequence ops on the CPU: index_gather / index_sum (Embedding,
// index_select, step picking) and the temporal pools.
// core/backend_ops_sequence.h states what each computes; docs/layers_sequence.md
// explains the choices. (Conv1d runs the Conv2d ops, backends/cpu/conv_ops.cpp.)
//
// Sums use the Reducer of reduce_arith.h (binary32 additions for plain fp32, the
// fast IEEE kernel or mac_reduce otherwise), so nothing depends on the thread count.
// The roundings around them and the one-term sums of the backward passes are
// numerics/sequence_steps.h's, shared with the CUDA kernels; the argument
// checks are core/sequence_checks.h's, shared with the CUDA backend.
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/reduce_arith.h"
#include "backends/cpu/row_ops.h"
#include "core/sequence_checks.h"
#include "numerics/philox.h"
#include "numerics/sequence_steps.h"
#include "numerics/stage_round.h"

namespace emu {
namespace {

using cpu_rows::row_grain;

using namespace cpu_reduce;  // NOLINT: the shared helpers of reduce_arith.h

}  // namespace

// ---------------------------------------------------------------------------
// Gathers and scatter-sums

// index (P), x (A,S,B) -> y (A,P,B)
void CpuBackend::index_gather(const Format& out, const Tensor& index, const Tensor& x, Tensor& y,
                              DrawKey key) {
  const std::vector<int64_t> idx = check_index_gather(index, x, y);
  const int64_t A = x.dim(0), S = x.dim(1), B = x.dim(2), P = static_cast<int64_t>(idx.size());
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
  const std::vector<int64_t> idx = check_index_sum(index, src, dst);
  const int64_t A = dst.dim(0), S = dst.dim(1), B = dst.dim(2), P = static_cast<int64_t>(idx.size());
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
  const TemporalPool pool = check_temporal_avg_pool_forward(time_dim, x, mask, y);
  const TimeLayout& t = pool.t;
  const Validity& v = pool.v;
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
  const TemporalPool pool = check_temporal_avg_pool_backward(time_dim, gy, mask, gx);
  const TimeLayout& t = pool.t;
  const Validity& v = pool.v;
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
  const TemporalPool pool = check_temporal_max_pool_forward(time_dim, x, mask, y, argmax);
  const TimeLayout& t = pool.t;
  const Validity& v = pool.v;
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
  const TemporalMaxGrad checked = check_temporal_max_pool_backward(time_dim, gy, argmax, gx);
  const TimeLayout& t = checked.t;
  const std::vector<int64_t>& am = checked.argmax;
  const std::vector<float> g = gy.to_vector();
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
