// The roundings of an op's steps into one storage format, and reductions whose
// terms are not one contiguous array, host+device. The layer-norm and sequence
// ops of both backends (backends/cpu/{layernorm,sequence}_ops.cpp and
// backends/cuda/ops/{layernorm,sequence}.cu) build their steps from these, so
// the two backends share one definition of every rounding.
//
// StageRound is R_f of one exact operation, element i drawing
// philox_draw(seed, stream, i) under :sr: an op builds one per stage s with
// stream key.stream + s (nn_stage_key, core/backend_ops_nn.h). Its arithmetic is
// that of backends/cpu/reduce_arith.h's Rounder (the pooling and batch-norm
// ops'): plain fp32 runs the native binary32 operation, which is that rounding
// (NaN made canonical), every other format one correct rounding of the exact
// result through numerics/element_arith.h (the bits of numerics/round.h).
#pragma once

#include <cstdint>

#include "numerics/element_arith.h"
#include "numerics/fp32_ops.h"
#include "numerics/mac.h"
#include "numerics/philox.h"

namespace emu {

// Whether a binary64 value is a binary32 value (NaN is not: it gets rounded,
// which makes it canonical).
EMU_HD bool is_binary32_value(double v) { return static_cast<double>(static_cast<float>(v)) == v; }

struct StageRound {
  Format f;
  FastRound fr;
  uint64_t seed = 0, stream = 0;
  bool native = false;  // plain fp32: native binary32 operations

  EMU_HD StageRound(const Format& format, uint64_t s, uint64_t st)
      : f(format), fr(format), seed(s), stream(st), native(is_plain_fp32(format)) {}

  EMU_HD uint32_t draw(uint64_t i) const { return is_stochastic(f) ? philox_draw(seed, stream, i) : 0u; }
  // R_f(a + b), R_f(a - b), R_f(a * b) of binary32 values.
  EMU_HD float add(float a, float b, uint64_t i) const {
    if (native) return fp32::add(a, b);
    return static_cast<float>(rounded_add(f, fr, a, b, draw(i)));
  }
  EMU_HD float sub(float a, float b, uint64_t i) const {
    if (native) return fp32::sub(a, b);
    return static_cast<float>(rounded_add(f, fr, a, -static_cast<double>(b), draw(i)));
  }
  EMU_HD float mul(float a, float b, uint64_t i) const {
    if (native) return fp32::mul(a, b);
    return static_cast<float>(rounded_mul(f, fr, a, b, draw(i)));
  }
  // R_f(a / b), the exact quotient of binary64 values (a sum in its accumulator,
  // a count): in plain fp32 the binary32 division when both are binary32 values.
  EMU_HD float div(double a, double b, uint64_t i) const {
    if (native && is_binary32_value(a) && is_binary32_value(b))
      return fp32::div(static_cast<float>(a), static_cast<float>(b));
    return static_cast<float>(rounded_div(f, fr, a, b, draw(i)));
  }
  // R_f(v) of a binary64 value (a binary32 value stays as it is in plain fp32).
  EMU_HD float round(double v, uint64_t i) const {
    if (native && is_binary32_value(v)) return static_cast<float>(v);
    return static_cast<float>(fr.on ? fr(v) : round_value(f, v, draw(i)));
  }
};

// MacRounding::reduce (numerics/element_arith.h: mac_reduce without a bias, the
// same bits) over K terms that `terms(k, &a, &b)` reads (a column of a row-major
// matrix, the positions of one index), term k in ascending k. `native` (native_dot
// or native_sum of the reduction's policy, with b = 1 for a sum): binary32
// multiply-adds with the zero-operand skip, the same bits fast (a product with 1
// is exact, a NaN is canonical either way).
template <class Terms, class Draw>
EMU_HD double reduce_terms(const MacRounding& m, bool native, int64_t K, const Terms& terms,
                           const Draw& draw) {
  float a = 0.0f, b = 0.0f;
  if (native) {
    float acc = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      terms(k, &a, &b);
      if (a != 0.0f && b != 0.0f) acc = fp32::add(acc, fp32::mul(a, b));
    }
    return acc;
  }
  if (!m.fast) {
    MacSums s;                                            // m.p is unfused (MacRounding): no fused-run state
    if (!m.p.mul_exact && m.p.split == SplitMul::Auto) {  // resolve from the terms (mac_state_for)
      s.split = SplitMul::Fp32F;
      for (int64_t k = 0; k < K; ++k) {
        terms(k, &a, &b);
        if (!split_auto_in_range(a) || !split_auto_in_range(b)) s.split = SplitMul::Fp32B;
      }
    }
    for (int64_t k = 0; k < K; ++k) {
      terms(k, &a, &b);
      mac_step(m.p, s, K, k, a, b, draw);
    }
    return mac_finish(m.p, s, K, nullptr, draw);
  }
  double sum = 0.0;  // +0 in acc
  for (int64_t k = 0; k < K; ++k) {
    terms(k, &a, &b);
    if (a == 0.0f || b == 0.0f) continue;  // zero operands are skipped
    double prod = static_cast<double>(a) * static_cast<double>(b);
    if (!m.p.mul_exact) prod = m.mul.on ? m.mul(prod) : round_value(m.p.mul, prod);
    sum = rounded_add(m.p.acc, m.acc, sum, prod, 0);
  }
  return m.out.on ? m.out(sum) : round_value(m.p.out, sum);
}

}  // namespace emu
