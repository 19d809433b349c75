// The per-element arithmetic of the element-wise and reduction kernels, host+device:
// one correctly rounded operation into a storage format (FastRound, rounded_add /
// rounded_mul / rounded_div, ElementArith), its fast plain-fp32 twin (Fp32Arith),
// and the row reduction of numerics/mac.h with fast roundings (MacRounding).
// The CPU loops (backends/cpu/*_ops.cpp) and the CUDA kernels (backends/cuda)
// call these same definitions, so both backends produce the same bits
// (docs/contract.md section 7).
#pragma once

#include <cstdint>

#include "numerics/fast_round.h"
#include "numerics/format.h"
#include "numerics/fp32_ops.h"
#include "numerics/mac.h"
#include "numerics/philox.h"
#include "numerics/round.h"

namespace emu {

// True when R_f is the identity on binary32 values and every operation of f is
// the native binary32 one (fp32, round to nearest even, subnormals, Inf/NaN).
// Plain binary64 (fp64 = e11m52, round to nearest even, subnormals, Inf/NaN):
// a native binary64 operation is R_fp64 of the exact result.
EMU_HD bool is_native_fp64(const Format& f) {
  return f.family == Family::Ieee && f.exp_bits == 11 && f.man_bits == 52 &&
         f.rounding == Rounding::NearestEven && f.subnormals && !f.saturate && f.specials == Specials::InfNan;
}

// R_f through numerics/fast_round.h (integer rounding of a binary64 bit
// pattern) where f allows it: IEEE-like formats in every mode but :sr, and
// plain fp64 (the identity). Exact for every binary64 input, so a binary64
// value that is the exact result of an operation rounds here with the same
// bits as round_value().
struct FastRound {
  bool on = false;
  bool fp64 = false;  // plain fp64: R is the identity (NaN made the canonical one)
  Rounding mode = Rounding::NearestEven;
  FastIeeeD p{};

  EMU_HD explicit FastRound(const Format& f)
      : on(fast_ieee_d_supported(f) || is_native_fp64(f)), fp64(is_native_fp64(f)), mode(f.rounding) {
    if (on && !fp64) p = fast_ieee_d_params(f);
  }
  EMU_HD double operator()(double x) const {
    if (fp64) return is_nan(x) ? quiet_nan() : x;
    switch (mode) {
      case Rounding::NearestEven:
        return fast_ieee_d<Rounding::NearestEven>(p, x);
      case Rounding::TowardZero:
        return fast_ieee_d<Rounding::TowardZero>(p, x);
      case Rounding::Up:
        return fast_ieee_d<Rounding::Up>(p, x);
      case Rounding::Down:
        return fast_ieee_d<Rounding::Down>(p, x);
      case Rounding::NearestAway:
        return fast_ieee_d<Rounding::NearestAway>(p, x);
      default:
        return quiet_nan();  // not reached: Stochastic is not `on`
    }
  }
  // R_f(x) for an exact x that is only known to lie strictly between the two
  // binary64 neighbours of q = RN64(x) (finite, nonzero). R_f is monotonic, so
  // when both neighbours round to the same bits x does too; false otherwise
  // (x may straddle a rounding boundary of f: the caller rounds exactly).
  EMU_HD bool bracketed(double q, double* r) const {
    const uint64_t u = double_bits(q);
    const double below = (*this)(bits_double(u - 1)), above = (*this)(bits_double(u + 1));
    if (double_bits(below) != double_bits(above)) return false;
    *r = below;
    return true;
  }
};

// Correctly rounded R_f(a + b), R_f(a * b), R_f(a / b) of binary64 operands
// (format values), one rounding of the exact result, the sign of an exact zero
// as numerics/exact_arith.h gives it. Identical to format_add / format_mul /
// format_div (numerics/round.h); `fr` (FastRound(f)) only makes them faster.
EMU_HD double rounded_add(const Format& f, const FastRound& fr, double a, double b, uint32_t rand) {
  if (fr.fp64) return fr(a + b);
  if (fr.on) {
    const double s = a + b;  // RN64; exact when the TwoSum error is 0
    if (s != 0.0 && s - s == 0.0) {
      const double bb = s - a;
      const double err = (a - (s - bb)) + (b - bb);
      if (err == 0.0) return fr(s);
      double r;
      if (fr.bracketed(s, &r)) return r;
    }
  }
  return format_add(f, a, b, rand);
}
// a, b binary32 values: the product is exact in binary64.
EMU_HD double rounded_mul(const Format& f, const FastRound& fr, float a, float b, uint32_t rand) {
  const double prod = static_cast<double>(a) * static_cast<double>(b);
  return fr.on ? fr(prod) : round_value(f, prod, rand);
}
EMU_HD double rounded_div(const Format& f, const FastRound& fr, double a, double b, uint32_t rand) {
  if (fr.fp64) return fr(a / b);
  if (fr.on) {
    const double q = a / b;  // RN64
    double r;
    if (q != 0.0 && q - q == 0.0 && fr.bracketed(q, &r)) return r;
  }
  return format_div(f, a, b, rand);
}

// mac_reduce (numerics/mac.h) without a bias, the same bits, with the roundings
// through FastRound where the policy has no chunks and no :sr (else it is
// mac_reduce itself). Built once per op, used per row. Its users are the sums
// and dots of docs/contract.md section 4.7 (row ops, norms, pools, losses,
// sequence ops), which never form fused runs (section 4.8): the policy is
// stored unfused whatever the layer's says.
struct MacRounding {
  MacPolicy p;
  FastRound mul, acc, out;
  bool fast;

  EMU_HD explicit MacRounding(const MacPolicy& policy)
      : p(unfused(policy)),
        mul(policy.mul),
        acc(policy.acc),
        out(policy.out),
        fast(policy.chunk == 0 && !(!policy.mul_exact && is_stochastic(policy.mul)) &&
             !is_stochastic(policy.acc) && !is_stochastic(policy.out) && !custom_mul(policy)) {
  }  // tables, splits: mac_reduce

  template <class Draw>
  EMU_HD double reduce(const float* a, const float* b, int64_t K, Draw draw) const {
    if (!fast) return mac_reduce<MacSums>(p, a, b, K, nullptr, draw);  // p is unfused
    double sum = 0.0;                                                  // +0 in acc
    for (int64_t k = 0; k < K; ++k) {
      if (a[k] == 0.0f || b[k] == 0.0f) continue;  // zero operands are skipped
      double prod = static_cast<double>(a[k]) * static_cast<double>(b[k]);
      if (!p.mul_exact) prod = mul.on ? mul(prod) : round_value(p.mul, prod);
      sum = rounded_add(p.acc, acc, sum, prod, 0);
    }
    return out.on ? out(sum) : round_value(p.out, sum);
  }
};

// Arithmetic of the element-wise kernels in one storage format f: each
// operation's exact result rounded once into f (docs/contract.md section 3). Site s
// of the current element (`at(i)`) draws philox_draw(seed, stream + s, i) under
// :sr. Operands are binary32 values; `b` of div_wide may be an accumulator value.
struct ElementArith {
  Format f;
  FastRound fr;
  uint64_t seed = 0, stream = 0, index = 0;

  EMU_HD ElementArith(const Format& format, uint64_t s, uint64_t st)
      : f(format), fr(format), seed(s), stream(st) {}
  EMU_HD void at(uint64_t i) { index = i; }
  EMU_HD uint32_t draw(uint32_t site) const {
    return is_stochastic(f) ? philox_draw(seed, stream + site, index) : 0u;
  }
  EMU_HD float round(float x, uint32_t site) const {
    return fr.on ? static_cast<float>(fr(x)) : quantize(f, x, draw(site));
  }
  EMU_HD float add(float a, float b, uint32_t site) const {
    return static_cast<float>(rounded_add(f, fr, a, b, draw(site)));
  }
  EMU_HD float sub(float a, float b, uint32_t site) const {
    return static_cast<float>(rounded_add(f, fr, a, -static_cast<double>(b), draw(site)));
  }
  EMU_HD float mul(float a, float b, uint32_t site) const {
    return static_cast<float>(rounded_mul(f, fr, a, b, draw(site)));
  }
  EMU_HD float div_wide(float a, double b, uint32_t site) const {
    return static_cast<float>(rounded_div(f, fr, a, b, draw(site)));
  }
};

// One binary32 operation rounded to nearest even, never fused into an FMA (the
// host build has -ffp-contract=off; the device spells the rounding out).
namespace fp32_op {
using fp32::add;
using fp32::div;
using fp32::mul;
using fp32::sub;
}  // namespace fp32_op

// The same operations when f is plain fp32: a native binary32 operation is R_fp32
// of the exact result, so this gives exactly ElementArith's bits, fast.
struct Fp32Arith {
  EMU_HD void at(uint64_t) {}
  EMU_HD float round(float x, uint32_t) const { return x; }
  EMU_HD float add(float a, float b, uint32_t) const { return fp32_op::add(a, b); }
  EMU_HD float sub(float a, float b, uint32_t) const { return fp32_op::sub(a, b); }
  EMU_HD float mul(float a, float b, uint32_t) const { return fp32_op::mul(a, b); }
  EMU_HD float div_wide(float a, double b, uint32_t) const {  // b: a binary32 value here
    return fp32_op::div(a, static_cast<float>(b));
  }
};

}  // namespace emu
