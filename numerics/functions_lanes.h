// fn_exp eight lanes at a time (host only), for the loops that take e^x of a
// whole row: the softmax and cross-entropy over a vocabulary (the CRNN's 4295
// words spent a third of its step in the scalar function).
//
// Every lane gives fn_exp's bits (numerics/functions.h): the same binary32
// operations in the same order, each branch of the scalar code computed for
// every lane and the taken one selected. tests/test_functions_lanes.cpp checks
// it against fn_exp on every binary32 input (long tier) and on the regions of
// every branch (default tier); fn_exp itself is checked against MPFR by
// tests/test_functions.cpp.
#pragma once

#if defined(__CUDACC__)
#error "numerics/functions_lanes.h is host code (GCC vector extensions)"
#endif

#include <cstdint>
#include <cstring>

#include "numerics/fast_round_lanes.h"
#include "numerics/functions.h"

namespace emu {
namespace fn_lanes {

inline v8f32 splat(float v) { return v8f32{v, v, v, v, v, v, v, v}; }
inline v8i32 splat_i(int32_t v) { return v8i32{v, v, v, v, v, v, v, v}; }
inline v8u32 bits_of(v8f32 x) {
  v8u32 u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline v8f32 float_of(v8u32 u) {
  v8f32 x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
// mask ? a : b per lane (mask lanes 0 or -1, as vector comparisons give).
inline v8f32 select(v8i32 mask, v8f32 a, v8f32 b) {
  const v8u32 m = __builtin_convertvector(mask, v8u32);  // the same bits
  return float_of((bits_of(a) & m) | (bits_of(b) & ~m));
}
inline v8i32 select_i(v8i32 mask, v8i32 a, v8i32 b) { return (a & mask) | (b & ~mask); }
inline v8f32 abs_f(v8f32 x) { return float_of(bits_of(x) & 0x7fffffffu); }
// 2^k for -126 <= k <= 127 (other lanes: some bit pattern, selected away by the caller).
inline v8f32 pow2f(v8i32 k) { return float_of(__builtin_convertvector(k + 127, v8u32) << 23); }

struct F2 {
  v8f32 hi, lo;
};
inline F2 two_sum(v8f32 a, v8f32 b) {
  const v8f32 s = a + b;
  const v8f32 bb = s - a;
  const v8f32 err_a = a - (s - bb);
  const v8f32 err_b = b - bb;
  return {s, err_a + err_b};
}
inline F2 fast_two_sum(v8f32 a, v8f32 b) {
  const v8f32 s = a + b;
  return {s, b - (s - a)};
}
inline F2 split12(v8f32 a) {
  const v8f32 c = splat(4097.0f) * a;
  const v8f32 hi = c - (c - a);
  return {hi, a - hi};
}
inline F2 two_prod(v8f32 a, v8f32 b) {
  const F2 as = split12(a), bs = split12(b);
  const v8f32 p = a * b;
  v8f32 e = as.hi * bs.hi - p;
  e = e + as.hi * bs.lo;
  e = e + as.lo * bs.hi;
  e = e + as.lo * bs.lo;
  return {p, e};
}

// fn_detail::scale_pow2: p * 2^k, one rounding, for the k that exp_parts gives (-150 <= k <= 128).
inline v8f32 scale_pow2(v8f32 p, v8i32 k) {
  const v8i32 k_high = select_i(k > 254, splat_i(254), k);
  const v8f32 high = (p * splat(0x1p127f)) * pow2f(k_high - 127);
  const v8f32 normal = p * pow2f(k);
  const v8f32 zero = p * splat(0.0f);
  const v8f32 low = (p * pow2f(k + 126)) * splat(0x1p-126f);
  return select(k > 127, high, select(k >= -126, normal, select(k < -200, zero, low)));
}

// fn_detail::scale_f2: (v.hi + v.lo) * 2^k rounded once, subnormal results included.
inline v8f32 scale_f2(F2 v, v8i32 k) {
  v = fast_two_sum(v.hi, v.lo);
  const v8f32 r = scale_pow2(v.hi, k);
  const v8f32 hs = abs_f(scale_pow2(v.hi, k + 149));
  v8f32 ls = scale_pow2(v.lo, k + 149);
  ls = select(v.hi < 0.0f, -ls, ls);
  v8f32 n = (hs + splat(0x1p23f)) - splat(0x1p23f);
  const v8f32 d = hs - n;
  n = select((d == 0.5f) & (ls > 0.0f), n + 1.0f, n);
  n = select((d == -0.5f) & (ls < 0.0f), n - 1.0f, n);
  const v8f32 sub = float_of(bits_of(n * splat(0x1p-149f)) | (bits_of(v.hi) & 0x80000000u));
  return select(abs_f(r) > 0x1p-126f, r, select(k < -200, v.hi * splat(0.0f), sub));
}

// fn_detail::exp_parts(hi, 0): e^x = (p.hi + p.lo) 2^k, for -120 <= x <= 89.
inline F2 exp_parts(v8f32 x, v8i32* k_out) {
  // exp_parts's polynomial (numerics/functions.h), Horner from the top.
  const float kPoly[5] = {0x1.555556p-3f, 0x1.5554e8p-5f, 0x1.1110acp-7f, 0x1.6d4352p-10f, 0x1.a17e3cp-13f};
  const v8f32 t = x * splat(fn_detail::kInvLn2);
  const v8i32 k = __builtin_convertvector(t + select(t < 0.0f, splat(-0.5f), splat(0.5f)), v8i32);
  const v8f32 kf = __builtin_convertvector(k, v8f32);
  const v8f32 r_hi = x - kf * splat(fn_detail::kLn2Hi);
  const v8f32 r_lo = kf * splat(fn_detail::kLn2Lo) - splat(0.0f);
  const F2 r = two_sum(r_hi, -r_lo);
  const F2 sq = two_prod(r.hi, r.hi);
  const F2 half_sq = {splat(0.5f) * sq.hi, splat(0.5f) * sq.lo};
  v8f32 poly = splat(kPoly[4]);
  for (int i = 3; i >= 0; --i) poly = poly * r.hi + splat(kPoly[i]);
  const v8f32 cubic = (sq.hi * r.hi) * poly;
  const v8f32 corr = r.lo + r.lo * r.hi;
  const F2 a = two_sum(splat(1.0f), r.hi);
  const F2 b = two_sum(a.hi, half_sq.hi);
  const v8f32 rest = ((a.lo + b.lo) + half_sq.lo) + (cubic + corr);
  *k_out = k;
  return fast_two_sum(b.hi, rest);
}

}  // namespace fn_lanes

// fn_exp of each lane.
inline v8f32 fn_exp_lanes(v8f32 x) {
  using namespace fn_lanes;
  const v8i32 nan = x != x;
  const v8i32 over = x > 0x1.62e42ep+6f;
  const v8i32 under = x < -0x1.9fe368p+6f;
  // The lanes fn_exp answers early compute e^0 (no conversion out of range), then take their answer.
  const v8f32 xs = select(nan | over | under, splat(0.0f), x);
  v8i32 k;
  const F2 p = exp_parts(xs, &k);
  const v8f32 e = scale_f2(p, k);
  return select(nan, float_of(v8u32{} + 0x7fc00000u),
                select(over, float_of(v8u32{} + 0x7f800000u), select(under, splat(0.0f), e)));
}

// y[i] = fn_exp(x[i]) for i < n (x and y may be the same array).
inline void fn_exp_array(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v8f32 v;
    std::memcpy(&v, x + i, sizeof v);
    v = fn_exp_lanes(v);
    std::memcpy(y + i, &v, sizeof v);
  }
  if (i < n) {            // the tail in one more vector (short rows, e.g. a 7-class softmax, are all tail)
    float lanes[8] = {};  // unused lanes take e^0
    std::memcpy(lanes, x + i, static_cast<size_t>(n - i) * sizeof(float));
    v8f32 v;
    std::memcpy(&v, lanes, sizeof v);
    v = fn_exp_lanes(v);
    std::memcpy(lanes, &v, sizeof v);
    std::memcpy(y + i, lanes, static_cast<size_t>(n - i) * sizeof(float));
  }
}

}  // namespace emu
