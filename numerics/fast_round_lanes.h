// Lane types and lane primitives for the rounding templates of
// numerics/fast_round.h.
//
// A "lane type" is a scalar (double, float: host and device) or, on the host,
// a GCC/Clang vector of them. Vector extensions give + - * & | ^ << >>
// comparisons and `mask ? a : b` on whole vectors with the scalar syntax, so
// the templates compile unchanged for both; the few primitives without an
// operator (unsigned min/max, "any lane set", the round-to-odd product) are
// overloaded here, before the templates, so that overload resolution at
// instantiation sees them (built-in vector types have no namespace for ADL).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#if !defined(__CUDACC__) && (defined(__AVX512F__) || defined(__AVX2__))
#include <immintrin.h>
#endif

#include "numerics/hd.h"

#if !defined(__CUDACC__) && !defined(__AVX512F__)
// Without AVX-512 the 64-byte vectors below are passed in memory; every
// function taking them is inline, so the ABI note GCC gives is moot.
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace emu {

// ---------------------------------------------------------------------------
// Scalar lanes (host and device).

template <class D>
struct LaneTraits;
template <>
struct LaneTraits<double> {
  using U = uint64_t;  // same-width unsigned integer lanes
  using I = int64_t;   // same-width signed integer lanes
  using Mask = bool;   // result of a comparison
};
template <>
struct LaneTraits<float> {
  using U = uint32_t;
  using I = int32_t;
  using Mask = bool;
};

template <class To, class From>
EMU_HD To lane_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "lane_cast reinterprets bits of equal size");
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

// A lane type filled with one value (scalars: the value itself). Not T{} + s,
// which would turn -0 into +0, and not a store per lane, which the compiler
// may leave as stores and a reload.
template <class T, class S, size_t... I>
EMU_HD T splat_lanes(S s, std::index_sequence<I...>) {
  return T{(static_cast<void>(I), s)...};
}
template <class T, class S>
EMU_HD T splat(S s) {
  if constexpr (std::is_arithmetic<T>::value) {
    return static_cast<T>(s);
  } else {
    using E = std::remove_reference_t<decltype(T{}[0])>;
    return splat_lanes<T>(static_cast<E>(s), std::make_index_sequence<sizeof(T) / sizeof(E)>{});
  }
}

EMU_HD uint64_t lane_umax(uint64_t a, uint64_t b) { return a > b ? a : b; }
EMU_HD uint64_t lane_umin(uint64_t a, uint64_t b) { return a < b ? a : b; }
EMU_HD uint32_t lane_umax(uint32_t a, uint32_t b) { return a > b ? a : b; }
EMU_HD uint32_t lane_umin(uint32_t a, uint32_t b) { return a < b ? a : b; }
// table[(x >> 23) & 63] << 16: a 64-entry lookup by the low six bits of a
// binary32 exponent field, giving the high half of a binary32 pattern.
EMU_HD uint32_t lane_lookup_hi16(const uint16_t* table, uint32_t x) {
  return static_cast<uint32_t>(table[(x >> 23) & 63u]) << 16;
}
// The same without clearing the low half, which holds the entry of x's bits
// 7-12 (what one vpermi2w gives for x >> 7; fast_posit_rne_poison_f).
EMU_HD uint32_t lane_lookup_both16(const uint16_t* table, uint32_t x) {
  return (static_cast<uint32_t>(table[(x >> 23) & 63u]) << 16) | table[(x >> 7) & 63u];
}

// Masks (one bit of "this lane needs the slow path" per lane).
EMU_HD bool lane_ge(uint32_t a, uint32_t b) { return a >= b; }
EMU_HD bool lane_ge(uint64_t a, uint64_t b) { return a >= b; }
EMU_HD bool lane_or(bool a, bool b) { return a || b; }
EMU_HD bool lane_any(bool m) { return m; }
// offset > limit (unsigned) && x != +-0, u being x's bits: x's exponent lies
// outside a range (offset = exponent field - lowest, wrapping below it) and x
// is not zero.
EMU_HD bool lane_beyond_nonzero(uint64_t offset, uint64_t limit, uint64_t u) {
  return offset > limit && (u & uint64_t{0x7fffffffffffffff}) != 0;
}
EMU_HD bool lane_beyond_nonzero(uint32_t offset, uint32_t limit, uint32_t u) {
  return offset > limit && (u & 0x7fffffffu) != 0;
}
// The same for a product x = a * b, zero exactly when a or b is (ua, ub: their bits).
EMU_HD bool lane_beyond_nonzero2(uint32_t offset, uint32_t limit, uint32_t ua, uint32_t ub) {
  return offset > limit && (ua & 0x7fffffffu) != 0 && (ub & 0x7fffffffu) != 0;
}

// a * b + c with one rounding (RNE): exact products enter magic-constant
// rounding without a double rounding. An IEEE 754 operation with one correct
// result, so every implementation gives the same bits.
EMU_HD float lane_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}

// Round-to-odd (RTO) sum on the binary32 grid: the exact a + b truncated
// toward zero to a binary32 value (subnormals included), with the last bit set
// if that was inexact. Any precision p <= 22 rounds an RTO value exactly as it
// rounds the exact sum, in every non-stochastic mode (Boldo & Melquiond,
// "Emulation of FMA and correctly rounded sums: proved algorithms using
// rounding to odd", IEEE TC 2008); the same holds for fixed-point grids at
// least 4x coarser than 2^-149. For finite sums below 2^128 (callers flag the
// others). Device and vector form: of the sums rounded down and up, which are
// equal or adjacent codes, the RTO value is the one with an odd code.

// x's bit pattern and mask, as binary32. The vector forms keep the operation in
// the floating-point domain (vandps) where the CPU has it: between the
// multiply and the FMA of fast_ieee_rne_product_normal_f an integer vpandd
// cost AMD Zen 4 a delay, 512^3 e6m6 / fp32 on one core 15.8 -> 17.0 GMAC/s
// (bench gemm, two runs each).
EMU_HD float lane_and_bits(float x, uint32_t mask) { return bits_float(float_bits(x) & mask); }

EMU_HD float lane_sum_rto(float a, float b) {
#if defined(__CUDA_ARCH__)
  const float rd = __fadd_rd(a, b), ru = __fadd_ru(a, b);
  return (float_bits(rd) & 1u) ? rd : ru;
#else
  // TwoSum: s + err is the exact sum, err exact (no overflow here: such sums are flagged).
  const float s = a + b;
  const float bb = s - a;
  const float err = (a - (s - bb)) + (b - bb);
  if (err == 0.0f || !(s - s == 0.0f)) return s;
  uint32_t u = float_bits(s);
  if ((u >> 31) != (float_bits(err) >> 31)) u -= 1;  // s is above |exact|: step toward zero
  return bits_float(u | 1u);
#endif
}

// ---------------------------------------------------------------------------
// Vector lanes (host only). AVX-512 instructions where the compiler targets
// them, per-lane loops otherwise; both give the same bits on the domain
// fast_round.h states.
#if !defined(__CUDACC__)

// 512-bit vectors (AVX-512 registers; split by the compiler on narrower ISAs,
// where GCC 12 moves them through memory: kernels use the 256-bit vectors
// below there, see backends/cpu/gemm_kernels.h).
typedef double v8f64 __attribute__((vector_size(64)));
typedef uint64_t v8u64 __attribute__((vector_size(64)));
typedef int64_t v8i64 __attribute__((vector_size(64)));
typedef float v16f32 __attribute__((vector_size(64)));
typedef uint32_t v16u32 __attribute__((vector_size(64)));
typedef int32_t v16i32 __attribute__((vector_size(64)));
// 256-bit vectors (AVX2 registers), with vector masks (0 or -1 per lane) on every ISA.
typedef float v8f32 __attribute__((vector_size(32)));
typedef uint32_t v8u32 __attribute__((vector_size(32)));
typedef int32_t v8i32 __attribute__((vector_size(32)));
typedef double v4f64 __attribute__((vector_size(32)));
typedef uint64_t v4u64 __attribute__((vector_size(32)));
typedef int64_t v4i64 __attribute__((vector_size(32)));
typedef float v4f32 __attribute__((vector_size(16)));

// Binary64 lanes at the target's native width (the build's -march), and binary32
// vectors of as many lanes: for loops that widen binary32 values to binary64
// (exact products, TwoSum), so that every vector lives in a register. 512-bit
// types on an AVX2 target went through memory (GCC 12) and ran the batch-norm
// steps of an e6m6 ResNet-18 several times slower than the 256-bit ones.
#if defined(__AVX512F__)
using NativeF64 = v8f64;
using NativeF64AsF32 = v8f32;
using NativeF32 = v16f32;  // binary32 lanes at the native width, for loops that stay in binary32
#else
using NativeF64 = v4f64;
using NativeF64AsF32 = v4f32;
using NativeF32 = v8f32;
#endif
constexpr int kNativeF64Lanes = static_cast<int>(sizeof(NativeF64) / sizeof(double));

#if defined(__AVX512F__)
using Mask8 = __mmask8;  // one bit per lane, in a mask register
using Mask16 = __mmask16;
#else
using Mask8 = v8i64;  // 0 or -1 per lane
using Mask16 = v16i32;
#endif

template <>
struct LaneTraits<v8f64> {
  using U = v8u64;
  using I = v8i64;
  using Mask = Mask8;
};
template <>
struct LaneTraits<v16f32> {
  using U = v16u32;
  using I = v16i32;
  using Mask = Mask16;
};
template <>
struct LaneTraits<v4f64> {
  using U = v4u64;
  using I = v4i64;
  using Mask = v4i64;
};
template <>
struct LaneTraits<v8f32> {
  using U = v8u32;
  using I = v8i32;
  using Mask = v8i32;
};

// 256-bit vectors: the operators of the vector extensions (AVX2 has unsigned
// 32-bit min/max; 64-bit unsigned compares become a biased signed compare).
inline v4u64 lane_umax(v4u64 a, v4u64 b) { return a > b ? a : b; }
inline v4u64 lane_umin(v4u64 a, v4u64 b) { return a < b ? a : b; }
inline v8u32 lane_umax(v8u32 a, v8u32 b) { return a > b ? a : b; }
inline v8u32 lane_umin(v8u32 a, v8u32 b) { return a < b ? a : b; }
inline v4i64 lane_beyond_nonzero(v4u64 offset, v4u64 limit, v4u64 u) {
  return (offset > limit) & ((u & uint64_t{0x7fffffffffffffff}) != 0);
}
inline v8i32 lane_beyond_nonzero(v8u32 offset, v8u32 limit, v8u32 u) {
  return (offset > limit) & ((u & 0x7fffffffu) != 0);
}
inline v8i32 lane_beyond_nonzero2(v8u32 offset, v8u32 limit, v8u32 ua, v8u32 ub) {
  return (offset > limit) & ((ua & 0x7fffffffu) != 0) & ((ub & 0x7fffffffu) != 0);
}
inline v4i64 lane_ge(v4u64 a, v4u64 b) { return a >= b; }
inline v8i32 lane_ge(v8u32 a, v8u32 b) { return a >= b; }
inline v4i64 lane_or(v4i64 a, v4i64 b) { return a | b; }
inline v8i32 lane_or(v8i32 a, v8i32 b) { return a | b; }
inline bool lane_any(v8i32 m) {
#if defined(__AVX__)
  return !_mm256_testz_si256((__m256i)m, (__m256i)m);
#else
  uint32_t r = 0;
  for (int i = 0; i < 8; ++i) r |= static_cast<uint32_t>(m[i]);
  return r != 0;
#endif
}
inline bool lane_any(v4i64 m) {
#if defined(__AVX__)
  return !_mm256_testz_si256((__m256i)m, (__m256i)m);
#else
  uint64_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint64_t>(m[i]);
  return r != 0;
#endif
}
inline v8f32 lane_and_bits(v8f32 x, uint32_t mask) {
#if defined(__AVX__)
  return (v8f32)_mm256_and_ps((__m256)x, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(mask))));
#else
  return lane_cast<v8f32>(lane_cast<v8u32>(x) & mask);
#endif
}

inline v8f32 lane_fma(v8f32 a, v8f32 b, v8f32 c) {
#if defined(__FMA__)
  return (v8f32)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
  v8f32 r;
  for (int i = 0; i < 8; ++i) r[i] = lane_fma(a[i], b[i], c[i]);
  return r;
#endif
}

// The round-to-odd sum of the scalar lane_sum_rto, branch-free on vector lanes:
// TwoSum's error says whether s is exact, and its sign whether s lies above the
// exact sum's magnitude (then the truncation is the next code toward zero).
template <class F, class U = typename LaneTraits<F>::U>
inline F lane_sum_rto_twosum(F a, F b) {
  const F s = a + b;
  const F bb = s - a;
  const F err = (a - (s - bb)) + (b - bb);
  const U u = lane_cast<U>(s);
  const U odd = (u - ((u ^ lane_cast<U>(err)) >> 31)) | 1u;
  // Exact (err == +-0) or not finite (s - s is NaN): s itself.
  return lane_cast<F>(((err == 0.0f) | ((s - s) != 0.0f)) ? u : odd);
}
inline v8f32 lane_sum_rto(v8f32 a, v8f32 b) { return lane_sum_rto_twosum(a, b); }

#if defined(__AVX512F__)
inline v8u64 lane_umax(v8u64 a, v8u64 b) {
  return (v8u64)_mm512_maskz_max_epu64(0xff, (__m512i)a, (__m512i)b);
}
inline v8u64 lane_umin(v8u64 a, v8u64 b) {
  return (v8u64)_mm512_maskz_min_epu64(0xff, (__m512i)a, (__m512i)b);
}
inline v16u32 lane_umax(v16u32 a, v16u32 b) {
  return (v16u32)_mm512_maskz_max_epu32(0xffff, (__m512i)a, (__m512i)b);
}
inline v16u32 lane_umin(v16u32 a, v16u32 b) {
  return (v16u32)_mm512_maskz_min_epu32(0xffff, (__m512i)a, (__m512i)b);
}
inline Mask8 lane_beyond_nonzero(v8u64 offset, v8u64 limit, v8u64 u) {
  return _mm512_mask_test_epi64_mask(_mm512_cmpgt_epu64_mask((__m512i)offset, (__m512i)limit), (__m512i)u,
                                     _mm512_set1_epi64(0x7fffffffffffffffll));
}
inline Mask16 lane_beyond_nonzero(v16u32 offset, v16u32 limit, v16u32 u) {
  return _mm512_mask_test_epi32_mask(_mm512_cmpgt_epu32_mask((__m512i)offset, (__m512i)limit), (__m512i)u,
                                     _mm512_set1_epi32(0x7fffffff));
}
inline Mask16 lane_beyond_nonzero2(v16u32 offset, v16u32 limit, v16u32 ua, v16u32 ub) {
  const __m512i abs = _mm512_set1_epi32(0x7fffffff);
  const __mmask16 nz = _mm512_test_epi32_mask((__m512i)ua, abs) & _mm512_test_epi32_mask((__m512i)ub, abs);
  return _mm512_mask_cmpgt_epu32_mask(nz, (__m512i)offset, (__m512i)limit);
}
inline Mask8 lane_ge(v8u64 a, v8u64 b) { return _mm512_cmpge_epu64_mask((__m512i)a, (__m512i)b); }
inline Mask16 lane_ge(v16u32 a, v16u32 b) { return _mm512_cmpge_epu32_mask((__m512i)a, (__m512i)b); }
inline bool lane_any(Mask8 m) { return m != 0; }
inline bool lane_any(Mask16 m) { return m != 0; }
inline Mask8 lane_or(Mask8 a, Mask8 b) { return a | b; }
inline Mask16 lane_or(Mask16 a, Mask16 b) { return a | b; }
#else
inline v8u64 lane_umax(v8u64 a, v8u64 b) { return a > b ? a : b; }
inline v8u64 lane_umin(v8u64 a, v8u64 b) { return a < b ? a : b; }
inline v16u32 lane_umax(v16u32 a, v16u32 b) { return a > b ? a : b; }
inline v16u32 lane_umin(v16u32 a, v16u32 b) { return a < b ? a : b; }
inline Mask8 lane_beyond_nonzero(v8u64 offset, v8u64 limit, v8u64 u) {
  return (offset > limit) & ((u & uint64_t{0x7fffffffffffffff}) != 0);
}
inline Mask16 lane_beyond_nonzero(v16u32 offset, v16u32 limit, v16u32 u) {
  return (offset > limit) & ((u & 0x7fffffffu) != 0);
}
inline Mask16 lane_beyond_nonzero2(v16u32 offset, v16u32 limit, v16u32 ua, v16u32 ub) {
  return (offset > limit) & ((ua & 0x7fffffffu) != 0) & ((ub & 0x7fffffffu) != 0);
}
inline Mask8 lane_ge(v8u64 a, v8u64 b) { return a >= b; }
inline Mask16 lane_ge(v16u32 a, v16u32 b) { return a >= b; }
inline bool lane_any(Mask8 m) {
  uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r |= static_cast<uint64_t>(m[i]);
  return r != 0;
}
inline bool lane_any(Mask16 m) {
  uint32_t r = 0;
  for (int i = 0; i < 16; ++i) r |= static_cast<uint32_t>(m[i]);
  return r != 0;
}
inline Mask8 lane_or(Mask8 a, Mask8 b) { return a | b; }
inline Mask16 lane_or(Mask16 a, Mask16 b) { return a | b; }
#endif

// The lookup with the table in two registers (vpermi2w: 64 16-bit entries,
// indexed by the low six bits of each 16-bit lane; the high halves of x >> 7
// hold the exponent fields).
struct LaneTable64 {
  uint16_t table[64];
#if defined(__AVX512BW__)
  __m512i lo, hi;
#endif
  explicit LaneTable64(const uint16_t* t) {
    memcpy(table, t, sizeof table);
#if defined(__AVX512BW__)
    lo = _mm512_loadu_si512(t);
    hi = _mm512_loadu_si512(t + 32);
#endif
  }
  const uint16_t* hi_table() const { return table; }
};
inline v16u32 lane_lookup_both16(const LaneTable64* t, v16u32 x) {
#if defined(__AVX512BW__)
  return (v16u32)_mm512_permutex2var_epi16(t->lo, (__m512i)(x >> 7), t->hi);
#else
  v16u32 r;
  for (int i = 0; i < 16; ++i) r[i] = lane_lookup_both16(t->hi_table(), x[i]);
  return r;
#endif
}
inline v8u32 lane_lookup_both16(const LaneTable64* t, v8u32 x) {
  v8u32 r;
  for (int i = 0; i < 8; ++i) r[i] = lane_lookup_both16(t->hi_table(), x[i]);
  return r;
}
// lane_lookup_hi16: the high halves alone.
inline v16u32 lane_lookup_hi16(const LaneTable64* t, v16u32 x) {
  return lane_lookup_both16(t, x) & 0xffff0000u;
}
inline v8u32 lane_lookup_hi16(const LaneTable64* t, v8u32 x) {
  return lane_lookup_both16(t, x) & 0xffff0000u;
}

inline v16f32 lane_and_bits(v16f32 x, uint32_t mask) {
#if defined(__AVX512DQ__)
  return (v16f32)_mm512_and_ps((__m512)x, _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(mask))));
#else
  return lane_cast<v16f32>(lane_cast<v16u32>(x) & mask);
#endif
}

inline v16f32 lane_fma(v16f32 a, v16f32 b, v16f32 c) {
#if defined(__AVX512F__)
  return (v16f32)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#else
  v16f32 r;
  for (int i = 0; i < 16; ++i) r[i] = lane_fma(a[i], b[i], c[i]);
  return r;
#endif
}

// Round-to-odd sum (see the scalar version above): the AVX-512 embedded
// rounding modes give both neighbours in one instruction each.
inline v16f32 lane_sum_rto(v16f32 a, v16f32 b) {
#if defined(__AVX512F__)
  const __m512 rd =
      _mm512_maskz_add_round_ps(0xffff, (__m512)a, (__m512)b, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 ru =
      _mm512_maskz_add_round_ps(0xffff, (__m512)a, (__m512)b, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
  const __mmask16 odd = _mm512_test_epi32_mask(_mm512_castps_si512(rd), _mm512_set1_epi32(1));
  return (v16f32)_mm512_mask_blend_ps(odd, ru, rd);
#else
  return lane_sum_rto_twosum(a, b);
#endif
}

#endif  // !__CUDACC__

}  // namespace emu
