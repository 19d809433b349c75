// Exact results of + - * / sqrt on binary64 operands (format values), as Exact.
//
// Integer arithmetic on 128-bit significands: sums and products are exact,
// quotients keep >= 126 and roots >= 97 significant bits plus a sticky bit: one
// correct rounding into any format follows, stochastic rounding of binary64-wide
// accumulators included (p + 32 bits needed; docs/contract.md section 3.2).
#pragma once

#include "numerics/exact.h"

namespace emu {

// x + y for operands without sticky bits (exact values). The sign an exact zero sum takes: +0, but -0 when
// rounding toward -Inf (IEEE 754 section 6.3); x + x = x for zeros of one sign.
EMU_HD Exact exact_add(Exact x, Exact y, bool round_down) {
  if (x.kind == Exact::NaN || y.kind == Exact::NaN) return exact_nan();
  if (x.kind == Exact::Inf || y.kind == Exact::Inf) {
    if (x.kind == Exact::Inf && y.kind == Exact::Inf && x.negative != y.negative) return exact_nan();
    return x.kind == Exact::Inf ? x : y;
  }
  if (x.kind == Exact::Zero && y.kind == Exact::Zero)
    return exact_zero(x.negative == y.negative ? x.negative : round_down);
  if (x.kind == Exact::Zero) return y;
  if (y.kind == Exact::Zero) return x;
  // Leave two bits of headroom for the carry of a sum.
  int lx = clz128(x.sig) - 2, ly = clz128(y.sig) - 2;
  x.sig <<= lx;
  x.exp -= lx;
  y.sig <<= ly;
  y.exp -= ly;
  if (y.exp > x.exp || (y.exp == x.exp && y.sig > x.sig)) {
    Exact t = x;
    x = y;
    y = t;
  }
  // Now |x| >= |y|; align y to x's last bit.
  int d = x.exp - y.exp;
  u128 ys = d >= 128 ? 0 : y.sig >> d;
  bool lost = d >= 128 ? true : (d > 0 && (y.sig << (128 - d)) != 0);
  Exact r;
  r.kind = Exact::Finite;
  r.negative = x.negative;
  r.exp = x.exp;
  r.sticky = lost;
  if (x.negative == y.negative) {
    r.sig = x.sig + ys;
  } else {
    // x - (ys + e) with 0 < e < 1 unit: (x - ys - 1) + (1 - e), sticky.
    r.sig = x.sig - ys - (lost ? 1 : 0);
    if (r.sig == 0 && !lost) return exact_zero(round_down);
  }
  return r;
}

EMU_HD Exact exact_add(double a, double b, bool round_down) {
  return exact_add(exact_from_double(a), exact_from_double(b), round_down);
}

EMU_HD Exact exact_sub(double a, double b, bool round_down) { return exact_add(a, -b, round_down); }

EMU_HD Exact exact_mul(double a, double b) {
  Exact x = exact_from_double(a), y = exact_from_double(b);
  bool negative = x.negative != y.negative;
  if (x.kind == Exact::NaN || y.kind == Exact::NaN) return exact_nan();
  if (x.kind == Exact::Inf || y.kind == Exact::Inf) {
    if (x.kind == Exact::Zero || y.kind == Exact::Zero) return exact_nan();
    return exact_inf(negative);
  }
  if (x.kind == Exact::Zero || y.kind == Exact::Zero) return exact_zero(negative);
  Exact r;
  r.kind = Exact::Finite;
  r.negative = negative;
  r.sig = x.sig * y.sig;  // at most 106 bits
  r.exp = x.exp + y.exp;
  return r;
}

EMU_HD Exact exact_div(double a, double b) {
  Exact x = exact_from_double(a), y = exact_from_double(b);
  bool negative = x.negative != y.negative;
  if (x.kind == Exact::NaN || y.kind == Exact::NaN) return exact_nan();
  if (x.kind == Exact::Inf) return y.kind == Exact::Inf ? exact_nan() : exact_inf(negative);
  if (y.kind == Exact::Inf) return exact_zero(negative);
  if (y.kind == Exact::Zero) return x.kind == Exact::Zero ? exact_nan() : exact_inf(negative);
  if (x.kind == Exact::Zero) return exact_zero(negative);
  // Long division in two steps: the dividend at bit 127 over a divisor of at
  // most 53 bits gives >= 74 quotient bits, the remainder (< divisor) shifted by
  // 52 gives 52 more: >= 126 bits, enough for binary64 plus 32 stochastic bits.
  x = normalized(x);
  const int divisor_shift = clz128(y.sig) - 75;  // divisor's top bit at bit 52 (subnormals too)
  y.sig <<= divisor_shift;
  y.exp -= divisor_shift;
  Exact r;
  r.kind = Exact::Finite;
  r.negative = negative;
  const u128 divisor = y.sig;
  const u128 high = x.sig / divisor, rest = (x.sig % divisor) << 52;
  r.sig = (high << 52) | (rest / divisor);
  r.sticky = rest % divisor != 0;
  r.exp = x.exp - y.exp - 52;
  return r;
}

// Integer square root of v and whether it was inexact.
EMU_HD u128 isqrt128(u128 v, bool* inexact) {
  u128 rest = v, root = 0, bit = static_cast<u128>(1) << 126;
  while (bit > rest) bit >>= 2;
  while (bit != 0) {
    if (rest >= root + bit) {
      rest -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  *inexact = rest != 0;
  return root;
}

EMU_HD Exact exact_sqrt(double a) {
  Exact x = exact_from_double(a);
  if (x.kind == Exact::NaN) return x;
  if (x.kind == Exact::Zero) return x;  // sqrt(-0) = -0
  if (x.negative) return exact_nan();
  if (x.kind == Exact::Inf) return x;
  x = normalized(x);
  if (x.exp & 1) {  // make the exponent even; the low bits of sig are zero
    x.sig >>= 1;
    x.exp += 1;
  }
  // isqrt gives >= 63 bits; 34 more digit-by-digit steps (each appends two zero
  // bits to the radicand: root' = 2 root + b) give >= 97, enough for binary64
  // plus 32 stochastic bits. The remainder stays below 2 root + 1 < 2^99.
  bool inexact = false;
  u128 root = isqrt128(x.sig, &inexact);
  u128 rest = x.sig - root * root;
  for (int i = 0; i < 34; ++i) {
    u128 trial = 4 * root + 1;
    if (4 * rest >= trial) {
      rest = 4 * rest - trial;
      root = 2 * root + 1;
    } else {
      rest = 4 * rest;
      root = 2 * root;
    }
  }
  Exact r;
  r.kind = Exact::Finite;
  r.sig = root;
  r.sticky = rest != 0;
  r.exp = x.exp / 2 - 34;
  return r;
}

}  // namespace emu
