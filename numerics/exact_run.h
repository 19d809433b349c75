// The exact sum of a fused run (docs/contract.md section 4.8): a Kulisch-style
// fixed-point accumulator wide enough for any binary64 value, host and device.
//
//   add(v) for binary64 values v (products, partial products, the accumulator)
//   take(...) -> the exact total as an Exact (top 128 bits + sticky), ready for
//   the one rounding round_exact(f, x, rand); the run is empty again after it.
//
// Why fixed point and not an Exact: a sum of several terms truncated to 128
// bits loses the bits that decide a directed rounding after cancellation
// (2^100 + 2^-100 - 2^100); the limbs keep every bit, so the total is exact and
// only the final extraction folds the low bits into the sticky bit, which is
// all one rounding needs.
//
// Bit i of the two's complement integer has weight 2^(i - kLsb). Every binary64
// value lies on 2^-1074's grid and below 2^1024; kLimbs * 64 = 2176 bits reach
// 2^1087, so up to 2^60 addends of the largest magnitude fit with the sign bit
// (a run adds at most 65536 terms, a split scheme's six partial products each).
// The limbs outside [lo, hi] are zero and are not stored: a run clears only
// what it touched, and a reduction without fused runs never touches them.
#pragma once

#include "numerics/exact.h"

// The run's arithmetic is out of line in device code (EMU_HD_OUTLINE,
// numerics/hd.h): every reduction kernel's mac_step reaches it, and inlining its
// limb loops into each of them made nvcc several times slower on the kernel
// files (batchnorm.cu: 437 s inlined, about 120 s not, on this 2-core machine).

namespace emu {

struct ExactRun {
  static constexpr int kLimbs = 34;
  static constexpr int kLsb = 1088;  // bit kLsb has weight 2^0

  uint64_t limb[kLimbs];  // valid in [lo, hi] only (lazily cleared)
  int lo = 1, hi = 0;     // empty range
  bool active = false;    // some value was added since the last take()
  bool nan = false, pos_inf = false, neg_inf = false;
  bool pos_zero = false, neg_zero = false, nonzero = false;  // for the sign of an exact zero total

  // Make limb i part of the stored range (zeroing what joins it).
  EMU_HD void touch(int i) {
    if (lo > hi) {
      lo = hi = i;
      limb[i] = 0;
      return;
    }
    while (i < lo) limb[--lo] = 0;
    while (i > hi) limb[++hi] = 0;
  }

  // Adds (or subtracts) the 117-bit value w1:w0 at limb i, carrying (borrowing)
  // upward as far as needed.
  EMU_HD_OUTLINE void add_at(int i, uint64_t w0, uint64_t w1, bool subtract) {
    touch(i);
    touch(i + 1);
    if (!subtract) {
      const uint64_t s0 = limb[i] + w0;
      const uint64_t c0 = s0 < w0 ? 1 : 0;
      limb[i] = s0;
      const uint64_t s1 = limb[i + 1] + w1;
      uint64_t c = s1 < w1 ? 1 : 0;
      limb[i + 1] = s1 + c0;
      if (limb[i + 1] < c0) c = 1;
      for (int j = i + 2; c && j < kLimbs; ++j) {
        touch(j);
        limb[j] += 1;
        c = limb[j] == 0 ? 1 : 0;
      }
    } else {
      const uint64_t d0 = limb[i] - w0;
      const uint64_t b0 = limb[i] < w0 ? 1 : 0;
      limb[i] = d0;
      uint64_t b = limb[i + 1] < w1 ? 1 : 0;
      const uint64_t d1 = limb[i + 1] - w1;
      if (d1 < b0) b = 1;
      limb[i + 1] = d1 - b0;
      for (int j = i + 2; b && j < kLimbs; ++j) {
        touch(j);
        b = limb[j] == 0 ? 1 : 0;
        limb[j] -= 1;
      }
    }
  }

  // Adds the binary64 value v exactly (any value: NaN, Inf and zeros are
  // recorded in flags).
  EMU_HD_OUTLINE void add(double v) {
    active = true;
    const uint64_t u = double_bits(v);
    const bool neg = (u >> 63) != 0;
    const int biased = static_cast<int>((u >> 52) & 0x7ff);
    uint64_t m = u & ((1ull << 52) - 1);
    if (biased == 0x7ff) {
      if (m)
        nan = true;
      else if (neg)
        neg_inf = true;
      else
        pos_inf = true;
      return;
    }
    if (biased == 0 && m == 0) {
      if (neg)
        neg_zero = true;
      else
        pos_zero = true;
      return;
    }
    nonzero = true;
    if (biased) m |= 1ull << 52;
    const int pos = (biased ? biased : 1) - 1075 + kLsb;  // bit of m's last bit, >= 14
    const int i = pos >> 6, sh = pos & 63;
    add_at(i, m << sh, sh ? m >> (64 - sh) : 0, neg);
  }

  // Back to the empty run (the limbs are left as they are: outside [lo, hi]).
  EMU_HD void clear() {
    lo = 1;
    hi = 0;
    active = nan = pos_inf = neg_inf = pos_zero = neg_zero = nonzero = false;
  }

  // The exact total of everything added, then clear(). `round_down`: the
  // target rounds toward -Inf (an exact zero total of addends that are not all
  // zeros of one sign is then -0, else +0: IEEE 754's rule for an exact zero
  // sum). `wrap_top` > 0 (wrapping fixed point, numerics/fixed.h
  // fixed_wrap_reduce): a total of magnitude >= 2^(wrap_top + 1) is replaced by
  // the value of the same sign whose magnitude keeps the bits below 2^wrap_top
  // and has bit 2^wrap_top set; it rounds and wraps like the total, and keeps
  // the bits that matter inside the 128 bits of an Exact.
  EMU_HD_OUTLINE Exact take(bool round_down, bool wrap, int wrap_top) {
    Exact x;
    if (nan || (pos_inf && neg_inf))
      x = exact_nan();
    else if (pos_inf || neg_inf)
      x = exact_inf(neg_inf);
    else
      x = finite_total(round_down, wrap, wrap_top);
    clear();
    return x;
  }

 private:
  EMU_HD Exact finite_total(bool round_down, bool wrap, int wrap_top) {
    // The sign: limbs above hi are zero, so only a range that reaches the top
    // limb can hold a negative two's complement value.
    const bool negative = hi == kLimbs - 1 && (limb[kLimbs - 1] >> 63) != 0;
    if (negative) {  // magnitude = ~x + 1 (limbs below lo are zero: the +1 carries through them)
      uint64_t c = 1;
      for (int j = lo; j <= hi; ++j) {
        limb[j] = ~limb[j] + c;
        c = c && limb[j] == 0 ? 1 : 0;
      }
    }
    int h = hi;
    while (h >= lo && limb[h] == 0) --h;
    if (h < lo) {  // an exact zero total
      const bool zero_negative = !nonzero && !pos_zero ? true : !nonzero && !neg_zero ? false : round_down;
      return exact_zero(zero_negative);
    }
    if (wrap) {
      const int b = wrap_top + kLsb;  // bit of weight 2^wrap_top
      const int top = h * 64 + 63 - clz64(limb[h]);
      if (top > b) {
        if (b < 0) {  // every bit of the total is a multiple of 2^wrap_top
          Exact r;
          r.kind = Exact::Finite;
          r.negative = negative;
          r.sig = 1;
          r.exp = wrap_top;
          return r;
        }
        const int bi = b >> 6, bs = b & 63;
        touch(bi);
        for (int j = bi + 1; j <= h; ++j) limb[j] = 0;
        limb[bi] = (limb[bi] & ((1ull << bs) - 1)) | (1ull << bs);
        h = bi;
      }
    }
    const int lz = clz64(limb[h]);
    const uint64_t w2 = limb[h], w1 = h - 1 >= lo ? limb[h - 1] : 0, w0 = h - 2 >= lo ? limb[h - 2] : 0;
    u128 sig = ((static_cast<u128>(w2) << 64) | w1) << lz;
    if (lz) sig |= w0 >> (64 - lz);
    bool sticky = (lz ? w0 << lz : w0) != 0;
    for (int j = lo; j <= h - 3 && !sticky; ++j) sticky = limb[j] != 0;
    Exact r;
    r.kind = Exact::Finite;
    r.negative = negative;
    r.sig = sig;
    r.sticky = sticky;
    r.exp = h * 64 + 63 - lz - 127 - kLsb;  // sig's bit 127 is the total's top bit
    return r;
  }
};

}  // namespace emu
