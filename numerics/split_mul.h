// Split multiplication (APE, Ma et al., ICS'22): a high-precision product
// built from low-precision multipliers, defined once for host and device
// (docs/contract.md section 5.6; docs/split_mul.md for the study).
//
//   mul: split:fp32b   three bf16 parts per operand, six partial products
//   mul: split:fp32f   two fp16 parts (low part scaled by 2^12), three products
//   mul: split:fp32t   two tf32 parts, three products
//   mul: split:int16   int16 operands as a signed high and an unsigned low byte,
//                      four byte products summed exactly, one addition
//   mul: split:auto    per reduction, fp32f when all its operands lie in fp16's
//                      safe range (split_auto_in_range), else fp32b (APE 5.2)
//
// One term of a reduction adds its partial products to the running
// accumulator one at a time, in the listed order, each addition rounded in the
// accumulator's format: that is what an accelerator without an FP32 multiplier
// does (APE's Listing 4), so the accumulator's roundings are part of the model.
// The conversions and subtractions use integer bit operations and explicit
// binary32 operations (numerics/fp32_ops.h), never libm or FMA, so the CPU and
// the CUDA kernels give the same bits.
#pragma once

#include <cstdint>

#include "numerics/fp32_ops.h"
#include "numerics/mac_policy.h"
#include "numerics/round.h"

namespace emu {

// SplitMul (which scheme a policy uses): numerics/mac_policy.h.

namespace split_detail {

// round-to-nearest-even of m / 2^shift, for m < 2^24 and shift >= 1.
EMU_HD uint32_t rne_shift(uint32_t m, int shift) {
  if (shift >= 25) return 0;  // m < 2^24 <= 2^(shift-1): below half
  const uint32_t q = m >> shift, r = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  return r > half || (r == half && (q & 1u)) ? q + 1 : q;
}

// 2^e as binary32, for -149 <= e <= 127 (subnormal below -126).
EMU_HD float pow2f(int e) {
  return e >= -126 ? bits_float(static_cast<uint32_t>(e + 127) << 23) : bits_float(1u << (e + 149));
}

// x rounded to nearest (ties to even) onto the grid of a binary format with p
// significant bits (p <= 24) and minimum normal exponent emin >= -126, with
// subnormals (grid 2^(emin - p + 1)); a result above max_finite is Inf. Signed
// zeros and Inf pass, NaN becomes the canonical NaN. Every value of such a
// format is a binary32 value, so the result is exact as a float.
EMU_HD float round_binary(float x, int p, int emin, float max_finite) {
  const uint32_t u = float_bits(x);
  const uint32_t sign = u & 0x80000000u;
  const int E = static_cast<int>((u >> 23) & 0xffu);
  if (E == 0xff) return fp32::canonical(x);
  uint32_t m = u & 0x7fffffu;
  if (E == 0 && m == 0) return x;
  const int e = E == 0 ? -149 : E - 150;  // |x| = m 2^e
  if (E != 0) m |= 0x800000u;
  const int lead = E == 0 ? -127 : E - 127;             // a binary32 subnormal lies below every emin >= -126
  const int q = (lead > emin ? lead : emin) - (p - 1);  // the grid's exponent at |x|
  if (q <= e) return x;                                 // already on the grid
  const uint32_t n = rne_shift(m, q - e);
  float r = fp32::mul(static_cast<float>(n), pow2f(q));  // exact, or Inf past 2^128
  if (r > max_finite) r = bits_float(0x7f800000u);
  return bits_float(float_bits(r) | sign);
}

EMU_HD float to_bf16(float x) { return round_binary(x, 8, -126, bits_float(0x7f7fffffu)); }
EMU_HD float to_tf32(float x) { return round_binary(x, 11, -126, bits_float(0x7f7fffffu)); }
EMU_HD float to_fp16(float x) { return round_binary(x, 11, -14, 65504.0f); }

// PTX cvt.rni.sat.s16.f32: nearest integer (ties to even), saturated to
// [-32768, 32767]; NaN gives 0.
EMU_HD int32_t to_int16(float x) {
  if (x != x) return 0;
  if (x >= 32767.0f) return 32767;
  if (x <= -32768.0f) return -32768;
  const uint32_t u = float_bits(x);
  const int E = static_cast<int>((u >> 23) & 0xffu);
  if (E == 0) return 0;  // |x| < 2^-126
  const uint32_t m = (u & 0x7fffffu) | 0x800000u;
  const int e = E - 150;  // |x| = m 2^e, |x| < 2^15 so e < 0
  const int32_t n = static_cast<int32_t>(rne_shift(m, -e));
  return (u >> 31) ? -n : n;
}

}  // namespace split_detail

// The parts of one operand. fp32b: hi, mi, lo; fp32f: hi and the scaled lo
// (mi = 0); fp32t: hi, lo (mi = 0). Not used for int16.
struct SplitParts {
  float hi = 0, mi = 0, lo = 0;
};

EMU_HD SplitParts split_parts(SplitMul s, float a) {
  using namespace split_detail;
  SplitParts r;
  switch (s) {
    case SplitMul::Fp32B: {
      r.hi = to_bf16(a);
      const float rest = fp32::sub(a, r.hi);  // exact for finite a (Sterbenz-like: on a's grid)
      r.mi = to_bf16(rest);
      r.lo = to_bf16(fp32::sub(rest, r.mi));
      break;
    }
    case SplitMul::Fp32F:
      r.hi = to_fp16(a);
      r.lo = to_fp16(fp32::mul(fp32::sub(a, r.hi), 4096.0f));  // APE's low part, scaled by 2^12
      break;
    case SplitMul::Fp32T:
      r.hi = to_tf32(a);
      r.lo = to_tf32(fp32::sub(a, r.hi));
      break;
    default:
      break;
  }
  return r;
}

// The exact int16 product of the converted operands, from the four byte
// products (signed high byte, unsigned low byte) as int8 units would form it.
EMU_HD int32_t split_int16_product(float a, float b) {
  const int32_t x = split_detail::to_int16(a), y = split_detail::to_int16(b);
  const int32_t xh = x >> 8, xl = x & 0xff, yh = y >> 8, yl = y & 0xff;  // x = 256 xh + xl
  // |x y| <= 2^30 and every partial sum stays inside int32.
  return xh * yh * 65536 + (xh * yl + xl * yh) * 256 + xl * yl;
}

// Whether x lies where split:fp32f keeps its precision (docs/contract.md
// section 5.6): zero, or 2^-14 <= |x| < 2^15, fp16's normal range without its
// top binade (there the scaled low part can overflow). Inf and NaN do not.
EMU_HD bool split_auto_in_range(float x) {
  const uint32_t e = (float_bits(x) >> 23) & 0xffu;  // biased exponent
  return (float_bits(x) & 0x7fffffffu) == 0 || (e >= 127 - 14 && e < 127 + 15);
}

// split:auto's scheme for one reduction's block of operands (a[0..K) and
// b[0..K), the row of A and the column of B of one output): Fp32F when every
// operand is in range, else Fp32B.
EMU_HD SplitMul split_auto_scheme(const float* a, const float* b, int64_t K) {
  for (int64_t k = 0; k < K; ++k)
    if (!split_auto_in_range(a[k]) || !split_auto_in_range(b[k])) return SplitMul::Fp32B;
  return SplitMul::Fp32F;
}

// The partial products of one term a * b under s (a, b nonzero), in the
// scheme's order, each exact in binary64 (at most 2 x 11 significant bits, the
// 2^-12 scaling included): add(p) per product. int16 has one: the exact int16
// product. Auto must be resolved before (split_mac_term, fused_split_products).
template <class Add>
EMU_HD void split_partial_products(SplitMul s, float a, float b, Add&& add) {
  if (s == SplitMul::Int16) {
    add(static_cast<double>(split_int16_product(a, b)));
    return;
  }
  const SplitParts x = split_parts(s, a), y = split_parts(s, b);
  auto product = [&](float u, float v, double scale) {
    add(static_cast<double>(u) * static_cast<double>(v) * scale);
  };
  switch (s) {
    case SplitMul::Fp32B:  // APE Listing 4: hi*hi; hi*mi, mi*hi; hi*lo, mi*mi, lo*hi
      product(x.hi, y.hi, 1.0);
      product(x.hi, y.mi, 1.0);
      product(x.mi, y.hi, 1.0);
      product(x.hi, y.lo, 1.0);
      product(x.mi, y.mi, 1.0);
      product(x.lo, y.hi, 1.0);
      break;
    case SplitMul::Fp32F:  // the low parts carry 2^12: scale their products back
      product(x.hi, y.hi, 1.0);
      product(x.hi, y.lo, 1.0 / 4096.0);
      product(x.lo, y.hi, 1.0 / 4096.0);
      break;
    case SplitMul::Fp32T:
      product(x.hi, y.hi, 1.0);
      product(x.hi, y.lo, 1.0);
      product(x.lo, y.hi, 1.0);
      break;
    default:
      break;
  }
}

// One term: acc' after adding the scheme's partial products of a and b to acc,
// one at a time, each addition rounded into `acc_format` (no draws: :sr
// accumulators are refused for split policies).
EMU_HD double split_mac_term(SplitMul s, const Format& acc_format, double acc, float a, float b) {
  // An Auto that no reduction resolved is a kernel bug: poison the result so
  // that tests see it (validate runs every op under split-auto).
  if (s == SplitMul::Auto) return quiet_nan();
  split_partial_products(s, a, b, [&](double p) { acc = add_into(acc_format, acc, p); });
  return acc;
}

// Unit multiplies per term (for reports): 6, 3, 3 and 4.
EMU_HD int split_unit_multiplies(SplitMul s) {
  switch (s) {
    case SplitMul::Fp32B:
      return 6;
    case SplitMul::Fp32F:
      return 3;
    case SplitMul::Fp32T:
      return 3;
    case SplitMul::Int16:
      return 4;
    default:
      return 1;
  }
}

}  // namespace emu
