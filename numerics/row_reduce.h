// The reductions of the row ops (softmax, log-softmax, the masked attention
// softmax, the losses, the sequence ops), host+device: which policy a row sum
// runs under, when native binary32 arithmetic gives a reduction's bits (or when
// it draws and must not take a fast path), where a row's draws lie, and the
// row sum and dot product themselves. The CPU loops (backends/cpu) and the CUDA
// kernels (backends/cuda/ops) call these same definitions, one row per thread,
// so both reduce in the canonical order of numerics/mac.h and give the same bits.
#pragma once

#include <cstdint>

#include "numerics/element_arith.h"
#include "numerics/fp32_ops.h"
#include "numerics/mac.h"
#include "numerics/philox.h"

namespace emu {

// A plain sum (products with 1 are exact) accumulated in p's acc, the result
// left in the accumulator's own format (acc_outer when chunked); a sum of
// docs/contract.md section 4.7, so never fused (section 4.8).
EMU_HD MacPolicy plain_sum_policy(const MacPolicy& p) {
  MacPolicy s = unfused(p);
  s.mul_exact = true;
  s.out = p.chunk > 0 ? p.acc_outer : p.acc;
  return s;
}

// p's reduction (products as p says) with the result left in the accumulator's
// own format: the losses add these results up further before their one rounding.
// The losses' reductions are section 4.7's, so never fused (section 4.8).
EMU_HD MacPolicy accumulate_only(const MacPolicy& p) {
  MacPolicy s = unfused(p);
  s.out = p.chunk > 0 ? p.acc_outer : p.acc;
  return s;
}

// Whether a reduction under p draws random numbers (some rounding it applies is :sr): such
// reductions run mac_reduce per output with the op's draw numbering, not the GEMM fast paths.
EMU_HD bool draws_random(const MacPolicy& p) {
  return is_stochastic(p.acc) || (!p.mul_exact && is_stochastic(p.mul)) || is_stochastic(p.out) ||
         (p.chunk > 0 && is_stochastic(p.acc_outer));
}

// Whether native binary32 additions give the sum's bits: acc fp32, no chunks.
EMU_HD bool native_sum(const MacPolicy& p) { return is_plain_fp32(p.acc) && p.chunk == 0; }

// Whether native binary32 multiply-adds give the dot product's bits (with the
// zero-operand skip): mul fp32 (rounded), acc fp32, out fp32, no chunks.
EMU_HD bool native_dot(const MacPolicy& p) {
  return !p.mul_exact && is_plain_fp32(p.mul) && !custom_mul(p) && native_sum(p) && is_plain_fp32(p.out);
}

// Draws of the reduction over one row: numerics/mac.h site s draws
// philox_draw(seed, stream, base + s).
struct RowDraws {
  uint64_t seed, stream, base;
  EMU_HD uint32_t operator()(uint64_t site) const { return philox_draw(seed, stream, base + site); }
};

// The draws of row `row` (a reduction of K terms) at rounding site `site` of an op keyed by `key`
// (a DrawKey, core/backend_types.h: any type with seed and stream): stream key.stream + site,
// indices from row * mac_site_count(K, chunk).
template <class Key>
EMU_HD RowDraws row_draws(const Key& key, uint32_t site, int64_t row, int64_t K, int chunk) {
  return RowDraws{key.seed, key.stream + site, static_cast<uint64_t>(row) * mac_site_count(K, chunk)};
}

// The draw of an element-wise or whole-op rounding into f at site `site`, index `index`:
// philox_draw(key.seed, key.stream + site, index) under :sr, else 0 (never read).
template <class Key>
EMU_HD uint32_t draw_at(const Format& f, const Key& key, uint32_t site, uint64_t index) {
  return is_stochastic(f) ? philox_draw(key.seed, key.stream + site, index) : 0u;
}

// sum_k a_k b_k as `dot` (a MacRounding of the reduction's policy) gives it, zero terms
// skipped; `native` (native_dot of that policy): binary32 multiply-adds, the same bits fast.
template <class Draw>
EMU_HD double row_dot(const MacRounding& dot, bool native, const float* a, const float* b, int64_t K,
                      const Draw& draw) {
  if (native) {
    float acc = 0.0f;
    for (int64_t k = 0; k < K; ++k)
      if (a[k] != 0.0f && b[k] != 0.0f) acc = fp32::add(acc, fp32::mul(a[k], b[k]));
    return acc;
  }
  return dot.reduce(a, b, K, draw);
}

// sum_k v_k as `sum` (a MacRounding of a plain-sum policy) gives it: mac_reduce with
// every b_k = 1 (`ones`: K ones), zero terms skipped; `native` (native_sum of that policy,
// its result format fp32): binary32 additions, the same bits fast.
template <class Draw>
EMU_HD double row_sum(const MacRounding& sum, bool native, const float* v, const float* ones, int64_t K,
                      const Draw& draw) {
  if (native) {
    float s = 0.0f;
    for (int64_t k = 0; k < K; ++k)
      if (v[k] != 0.0f) s = fp32::add(s, v[k]);
    return s;
  }
  return sum.reduce(v, ones, K, draw);
}

}  // namespace emu
