// Helpers shared by the CPU row-wise ops (softmax, masked attention softmax,
// losses, sequence ops) and the direct (non-GEMM) reductions of the convolution
// and sparse ops: how many rows a thread task takes, when native binary32
// arithmetic gives a reduction's bits (or when it draws and must not take a fast
// path), and where a row's or an output's draws lie.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/reduce_arith.h"
#include "core/draw_key.h"
#include "numerics/mac.h"
#include "numerics/parallel_for.h"
#include "numerics/philox.h"

namespace emu::cpu_rows {

// Rows per thread task: at least ~16K floats each.
inline int64_t row_grain(int64_t row_floats) {
  return std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, row_floats));
}

// A plain sum (products with 1 are exact) accumulated in p's acc, the result
// left in the accumulator's own format (acc_outer when chunked).
inline MacPolicy plain_sum_policy(const MacPolicy& p) {
  MacPolicy s = p;
  s.mul_exact = true;
  s.out = p.chunk > 0 ? p.acc_outer : p.acc;
  return s;
}

// Whether a reduction under p draws random numbers (some rounding it applies is :sr): such
// reductions run mac_reduce per output with the op's draw numbering, not the GEMM fast paths.
inline bool draws_random(const MacPolicy& p) {
  return is_stochastic(p.acc) || (!p.mul_exact && is_stochastic(p.mul)) || is_stochastic(p.out) ||
         (p.chunk > 0 && is_stochastic(p.acc_outer));
}

// Whether native binary32 additions give the sum's bits: acc fp32, no chunks.
inline bool native_sum(const MacPolicy& p) { return is_plain_fp32(p.acc) && p.chunk == 0; }

// Whether native binary32 multiply-adds give the dot product's bits (with the
// zero-operand skip): mul fp32 (rounded), acc fp32, out fp32, no chunks.
inline bool native_dot(const MacPolicy& p) {
  return !p.mul_exact && is_plain_fp32(p.mul) && native_sum(p) && is_plain_fp32(p.out);
}

// Draws of the reduction over row `row` of length K under site stream `stream`.
struct RowDraws {
  uint64_t seed, stream, base;
  uint32_t operator()(uint64_t site) const { return philox_draw(seed, stream, base + site); }
};

inline RowDraws row_draws(DrawKey key, uint32_t site, int64_t row, int64_t K, int chunk) {
  return RowDraws{key.seed, key.stream + site, static_cast<uint64_t>(row) * mac_site_count(K, chunk)};
}

// mac_reduce per output o in [0, outputs) with draws at o * sites + site; `terms(o, a, b)` writes the K
// operand pairs of output o in canonical order and returns its bias (or null). The convolutions' path
// for policies their GEMM kernels do not cover.
template <class Terms>
void direct_reduce(const MacPolicy& p, int64_t outputs, int64_t K, DrawKey key, int threads, float* out,
                   const Terms& terms) {
  const uint64_t sites = mac_site_count(K, p.chunk);
  parallel_for(outputs, threads, 16, [&](int64_t o0, int64_t o1) {
    std::vector<float> a(static_cast<size_t>(K)), b(static_cast<size_t>(K));
    for (int64_t o = o0; o < o1; ++o) {
      const float* bias = terms(o, a.data(), b.data());
      const uint64_t base = static_cast<uint64_t>(o) * sites;
      auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream, base + site); };
      out[o] = static_cast<float>(mac_reduce(p, a.data(), b.data(), K, bias, draw));
    }
  });
}

}  // namespace emu::cpu_rows
