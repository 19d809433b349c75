// Micro-kernels of the fast GEMM paths (backends/cpu/gemm.cpp).
//
// A micro-kernel updates an MR x NR tile of accumulators over kc consecutive
// terms k: for k, for each row r, for the NR columns at once (SIMD lanes):
//   p_j = R_mul(a_rk * b_kj);  acc_rj = R_acc(acc_rj + p_j)
// i.e. every accumulator still sees its terms one at a time in ascending k;
// only different outputs share an instruction. Operands come packed:
// ap[k * MR + r] and bp[k * NR + j] (zero padded past the matrix edge, whose
// outputs are discarded).
//
// Zero operands: mac_reduce skips a term with a zero operand. The kernels do
// not; they rely on each path's proof that such a term leaves the accumulator
// unchanged (the product rounds to +-0 and the accumulator is never -0, see
// docs/gemm.md), and on flags (or a scan for non-finite operands) for Inf/NaN
// times zero. Lanes whose rounding flagged an input outside the fast kernel's
// domain are recomputed with the reference step.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "numerics/fast_round.h"
#include "numerics/mac.h"

namespace emu::gemm_detail {

template <class V, class T>
inline V load_lanes(const T* p) {
  V v;
  memcpy(&v, p, sizeof v);
  return v;
}
template <class V, class T>
inline void store_lanes(T* p, V v) {
  memcpy(p, &v, sizeof v);
}

// Two 8-lane binary64 vectors of binary32 values -> one 16-lane binary32 vector (exact).
inline v16f32 narrow_concat(v8f64 lo, v8f64 hi) {
  const v8f32 l = __builtin_convertvector(lo, v8f32);
  const v8f32 h = __builtin_convertvector(hi, v8f32);
  return __builtin_shufflevector(l, h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// One term of mac_reduce's loop (numerics/mac.h) for a policy without :sr in
// mul and acc: the reference the kernels fall back to, lane by lane.
inline double ref_step(const MacPolicy& p, double acc, float a, float b) { return mac_term(p, acc, a, b); }

// All lanes of one accumulator vector redone with ref_step (a flagged lane is
// rare, so the whole vector is recomputed). old: the lanes before the term.
template <class V, class BElem>
[[gnu::noinline, gnu::cold]] V redo_lanes(const MacPolicy& p, V old, float a, const BElem* b) {
  constexpr int kLanes = sizeof(V) / sizeof(old[0]);
  V next = old;
  for (int l = 0; l < kLanes; ++l)
    next[l] = static_cast<decltype(+old[0])>(ref_step(p, old[l], a, static_cast<float>(b[l])));
  return next;
}

// ---------------------------------------------------------------------------
// The loop shared by all kernels. K supplies: MR, NR, AccV (accumulator
// vector), kAccLanes, AElem/BElem/Acc, a BRow type with load(bp), and
// step<kChecked>(a, brow, acc_row, bp_row) updating the NR / kAccLanes vectors
// of one row. kChecked = false: the caller knows that no lane can be flagged
// (the operands bound every product below the flag threshold), and the kernel
// may skip the test.
template <bool kChecked, class K>
inline void micro_loop(const K& kern, const typename K::AElem* ap, const typename K::BElem* bp, int64_t kc,
                       typename K::Acc* acc) {
  constexpr int MR = K::MR, NV = K::NR / K::kAccLanes;
  typename K::AccV c[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) c[r][v] = load_lanes<typename K::AccV>(acc + r * K::NR + v * K::kAccLanes);
  for (int64_t k = 0; k < kc; ++k) {
    const typename K::BElem* brow = bp + k * K::NR;
    typename K::BRow b;
    b.load(brow);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) kern.template step<kChecked>(ap[k * MR + r], b, c[r], brow);
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) store_lanes(acc + r * K::NR + v * K::kAccLanes, c[r][v]);
}

// Rows of B (NR = 32 columns) for kernels with binary32, binary64 and int32 lanes.
struct BRowF32x2 {
  v16f32 v[2];
  void load(const float* p) {
    v[0] = load_lanes<v16f32>(p);
    v[1] = load_lanes<v16f32>(p + 16);
  }
};
struct BRowF32x1 {
  v16f32 v[1];
  void load(const float* p) { v[0] = load_lanes<v16f32>(p); }
};
struct BRowF64x4 {
  v8f64 v[4];
  void load(const double* p) {
    for (int i = 0; i < 4; ++i) v[i] = load_lanes<v8f64>(p + 8 * i);
  }
};
struct BRowI32x2 {
  v16i32 v[2];
  void load(const int32_t* p) {
    v[0] = load_lanes<v16i32>(p);
    v[1] = load_lanes<v16i32>(p + 16);
  }
};

// (a) mul fp32 / acc fp32, RNE. One binary32 multiply is R_fp32 of the exact
// product and one add is R_fp32 of the exact sum (no FMA: -ffp-contract=off).
// Needs finite operands (Inf * 0 would not be skipped); gemm.cpp checks.
// Tile 8 x 16: each broadcast A element feeds one multiply, so the compiler folds
// the broadcast into it (an embedded-broadcast operand) instead of issuing a
// separate broadcast; on AMD Zen 4 that separate broadcast took a vector pipe
// and the 4 x 32 tile ran at about half the multiply/add throughput.
struct KernFp32 {
  static constexpr int MR = 8, NR = 16, kAccLanes = 16;
  using AElem = float;
  using BElem = float;
  using Acc = float;
  using AccV = v16f32;
  using BRow = BRowF32x1;
  AElem pack_a(float x) const { return x; }
  BElem pack_b(float x) const { return x; }
  double acc_value(Acc x) const { return x; }
  template <bool kChecked>
  void step(float a, const BRow& b, v16f32* c, const float*) const {
    c[0] = c[0] + splat<v16f32>(a) * b.v[0];
  }
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
};

// Products of kernels (b) and (c), 16 binary32 values per vector: exact
// products rounded by an FMA with the magic constant (exp_bits <= 8,
// man_bits <= 21) ...
struct ProductF32 {
  using AElem = float;
  using BElem = float;
  using BRow = BRowF32x2;
  FastIeeeRneF pm;
  // The rounded products of columns 16v .. 16v+15; *flagged: some lane is
  // outside the kernel's domain (only tested when kChecked).
  template <bool kChecked>
  v16f32 product(float a, const BRow& b, int v, bool* flagged) const {
    v16u32 e;
    const v16f32 r = fast_ieee_rne_product_f<false>(pm, splat<v16f32>(a), b.v[v], &e);
    if (kChecked) *flagged = lane_any(lane_ge(e, splat<v16u32>(pm.flag_bits)));
    return r;
  }
  // Products below this bound are never flagged.
  double safe_bound() const { return static_cast<double>(bits_float(pm.flag_bits)); }
};
// ... or with exact binary64 products in two 8-lane halves (exp_bits <= 8,
// man_bits 22 and 23, which binary32 lanes cannot serve).
struct ProductRne {
  using AElem = double;
  using BElem = double;
  using BRow = BRowF64x4;
  FastIeeeRneD pm;
  template <bool kChecked>
  v16f32 product(double a, const BRow& b, int v, bool* flagged) const {
    const v8f64 av = splat<v8f64>(a);
    v8u64 e0, e1;
    const v8f64 lo = fast_ieee_rne_d<false>(pm, av * b.v[2 * v], &e0);
    const v8f64 hi = fast_ieee_rne_d<false>(pm, av * b.v[2 * v + 1], &e1);
    if (kChecked) *flagged = lane_any(lane_ge(lane_umax(e0, e1), splat<v8u64>(pm.flag_bits)));
    return narrow_concat(lo, hi);
  }
  double safe_bound() const { return bits_double(pm.flag_bits); }
};

// (b) mul eXmY (RNE) / acc fp32 RNE: rounded products (Product), binary32
// adds. A zero product may come out +0 for -0: the accumulator is never -0
// (it starts at +0, +0 + -0 = +0, and a nonzero sum of binary32 values never
// rounds to 0 in fp32), so either adds nothing. Vectors where a product
// reached the top binade of mul (possible overflow), or Inf/NaN, are redone
// lane by lane.
template <class Product>
struct KernMulF32 {
  static constexpr int MR = 4, NR = 32, kAccLanes = 16;
  using AElem = typename Product::AElem;
  using BElem = typename Product::BElem;
  using Acc = float;
  using AccV = v16f32;
  using BRow = typename Product::BRow;
  MacPolicy p;
  Product prod;
  AElem pack_a(float x) const { return x; }
  BElem pack_b(float x) const { return x; }
  double acc_value(Acc x) const { return x; }
  template <bool kChecked>
  void step(AElem a, const BRow& b, v16f32* c, const BElem* brow) const {
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      bool flagged = false;
      const v16f32 r = prod.template product<kChecked>(a, b, v, &flagged);
      if (kChecked && __builtin_expect(flagged, 0)) {
        c[v] = redo_lanes(p, c[v], static_cast<float>(a), brow + 16 * v);
      } else {
        c[v] = c[v] + r;
      }
    }
  }
  double safe_bound() const { return prod.safe_bound(); }
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
};

// (b) mul eXmY in any mode but :sr (also :nosub, :sat, fn, finite-only) / acc
// fp32 RNE: exact binary64 products, integer rounding (fast_ieee_d), which
// covers every input. Needs finite operands; gemm.cpp checks.
template <Rounding Mode>
struct KernMulIeee {
  static constexpr int MR = 4, NR = 32, kAccLanes = 16;
  using AElem = double;
  using BElem = double;
  using Acc = float;
  using AccV = v16f32;
  using BRow = BRowF64x4;
  FastIeeeD pm;
  AElem pack_a(float x) const { return x; }
  BElem pack_b(float x) const { return x; }
  double acc_value(Acc x) const { return x; }
  template <bool kChecked>
  void step(double a, const BRow& b, v16f32* c, const double*) const {
    const v8f64 av = splat<v8f64>(a);
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      const v8f64 lo = fast_ieee_d<Mode>(pm, av * b.v[2 * v]);
      const v8f64 hi = fast_ieee_d<Mode>(pm, av * b.v[2 * v + 1]);
      c[v] = c[v] + narrow_concat(lo, hi);
    }
  }
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
};

// (c) mul and acc IEEE-like with <= 11 significant bits, RNE, mul's values a
// subset of acc's, acc with Inf/NaN, subnormals, no :sat: products as in (b),
// then the sum in binary32 and one rounding into acc (lean fast_ieee_rne_f32).
// Rounding the binary32 sum is innocuous double rounding (24 >= 2 * 11 + 2;
// docs/contract.md section 1.4). The accumulator is never -0: it starts at +0 and a
// nonzero sum of two values on acc's grid is at least its smallest step.
template <class Product, int kAccWide>  // acc has exp_bits == 8 (1) or fewer (0)
struct KernAccIeee {
  static constexpr int MR = 4, NR = 32, kAccLanes = 16;
  using AElem = typename Product::AElem;
  using BElem = typename Product::BElem;
  using Acc = float;
  using AccV = v16f32;
  using BRow = typename Product::BRow;
  MacPolicy p;
  Product prod;
  FastIeeeRneF32 pa;
  AElem pack_a(float x) const { return x; }
  BElem pack_b(float x) const { return x; }
  double acc_value(Acc x) const { return x; }
  template <bool kChecked>
  void step(AElem a, const BRow& b, v16f32* c, const BElem* brow) const {
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      bool flagged = false;
      const v16f32 r = prod.template product<kChecked>(a, b, v, &flagged);
      if (kChecked && __builtin_expect(flagged, 0)) {
        c[v] = redo_lanes(p, c[v], static_cast<float>(a), brow + 16 * v);
      } else {
        c[v] = fast_ieee_rne_f32<false, kAccWide>(pa, c[v] + r);
      }
    }
  }
  double safe_bound() const { return prod.safe_bound(); }
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
};

// Two int16 products per 32-bit lane, summed into it: acc + a.lo b.lo + a.hi b.hi
// (no saturation: vpdpwssd, or vpmaddwd + vpaddd, whose pair sum cannot
// overflow for the |ia|, |ib| <= 32767 that gemm.cpp admits). Chosen at compile
// time from the build's -march (the CPU that builds is the CPU that runs).
#if defined(__AVX512VNNI__)
#define EMU_GEMM_INT8_KERNEL "AVX-512 VNNI vpdpwssd"
#elif defined(__AVX512BW__)
#define EMU_GEMM_INT8_KERNEL "AVX-512 BW vpmaddwd"
#elif defined(__AVXVNNI__)
#define EMU_GEMM_INT8_KERNEL "AVX-VNNI vpdpwssd (256-bit)"
#elif defined(__AVX2__)
#define EMU_GEMM_INT8_KERNEL "AVX2 vpmaddwd"
#else
#define EMU_GEMM_INT8_KERNEL "lane loop"
#endif
inline v16i32 dot2_i16(v16i32 acc, v16i32 a, v16i32 b) {
#if defined(__AVX512VNNI__)
  return (v16i32)_mm512_dpwssd_epi32((__m512i)acc, (__m512i)a, (__m512i)b);
#elif defined(__AVX512BW__)
  return acc + (v16i32)_mm512_madd_epi16((__m512i)a, (__m512i)b);
#elif defined(__AVX2__)
  typedef int32_t v8i32 __attribute__((vector_size(32)));
  v8i32 a2[2], b2[2], c2[2];
  memcpy(a2, &a, sizeof a);
  memcpy(b2, &b, sizeof b);
  memcpy(c2, &acc, sizeof acc);
  for (int h = 0; h < 2; ++h) {
#if defined(__AVXVNNI__)
    c2[h] = (v8i32)_mm256_dpwssd_avx_epi32((__m256i)c2[h], (__m256i)a2[h], (__m256i)b2[h]);
#else
    c2[h] = c2[h] + (v8i32)_mm256_madd_epi16((__m256i)a2[h], (__m256i)b2[h]);
#endif
  }
  v16i32 r;
  memcpy(&r, c2, sizeof r);
  return r;
#else
  v16i32 r;
  for (int i = 0; i < 16; ++i) {
    const int32_t alo = static_cast<int16_t>(a[i] & 0xffff), ahi = static_cast<int16_t>(a[i] >> 16);
    const int32_t blo = static_cast<int16_t>(b[i] & 0xffff), bhi = static_cast<int16_t>(b[i] >> 16);
    r[i] = acc[i] + alo * blo + ahi * bhi;
  }
  return r;
#endif
}

// (d) integer-valued operands: a = ia 2^-fa, b = ib 2^-fb with |ia|, |ib| <=
// 32767, packed as int16 pairs of consecutive terms k, k+1 (kKGroup = 2) so
// that one dot2_i16 adds two products: acc = sum ia ib, the accumulator's
// value times 2^(fa + fb). gemm.cpp checks that no partial sum, in any order,
// can leave the accumulator's range or an int32 (the sum of |ia ib| is below
// both), so every order of these exact integer additions gives the same
// integer: pairing terms changes no bit.
struct KernInt {
  static constexpr int MR = 4, NR = 32, kAccLanes = 16, kKGroup = 2;
  using AElem = int32_t;  // (ia_k, ia_k+1) as int16 halves
  using BElem = int32_t;
  using Acc = int32_t;
  using AccV = v16i32;
  using BRow = BRowI32x2;
  float a_scale = 1.0f, b_scale = 1.0f;  // 2^fa, 2^fb
  double acc_unit = 1.0;                 // 2^-(fa + fb)
  static int32_t pair(int32_t lo, int32_t hi) {
    return static_cast<int32_t>((static_cast<uint32_t>(hi) << 16) | (static_cast<uint32_t>(lo) & 0xffffu));
  }
  AElem pack_a2(float x0, float x1) const {
    return pair(static_cast<int32_t>(x0 * a_scale), static_cast<int32_t>(x1 * a_scale));
  }
  BElem pack_b2(float x0, float x1) const {
    return pair(static_cast<int32_t>(x0 * b_scale), static_cast<int32_t>(x1 * b_scale));
  }
  double acc_value(Acc x) const { return static_cast<double>(x) * acc_unit; }
  template <bool kChecked>
  void step(int32_t a, const BRow& b, v16i32* c, const int32_t*) const {
    const v16i32 av = splat<v16i32>(a);
    c[0] = dot2_i16(c[0], av, b.v[0]);
    c[1] = dot2_i16(c[1], av, b.v[1]);
  }
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
};

// (e) mul and acc posits (fast_posit_rne_f_supported, RNE): exact products
// rounded by fast_posit_rne_product_f (FMA with the magic constant), sums
// rounded to odd (lane_sum_rto) and then by fast_posit_rne_f, 16 lanes at a
// time. Lanes outside the uniform-grid binades (e.g. products below 2^-24 for
// posit16_1, which are not that rare) are redone per vector with the
// reference step. A posit zero is +0, so the accumulator is never -0 and zero
// terms change nothing.
template <bool kTable>  // C by table lookup (FastPositRneF::has_table for both formats)
struct KernPosit {
  static constexpr int MR = 4, NR = 32, kAccLanes = 16;
  using AElem = float;
  using BElem = float;
  using Acc = float;
  using AccV = v16f32;
  using BRow = BRowF32x2;
  MacPolicy p;
  FastPositRneF pm, pa;
  LaneTable64 tm, ta;  // C lookup tables in registers (kTable)
  KernPosit(const MacPolicy& policy, const FastPositRneF& mul, const FastPositRneF& acc)
      : p(policy), pm(mul), pa(acc), tm(pm.c_high), ta(pa.c_high) {}
  AElem pack_a(float x) const { return x; }
  BElem pack_b(float x) const { return x; }
  double acc_value(Acc x) const { return x; }
  template <bool kChecked>
  void step(float a, const BRow& b, v16f32* c, const float* brow) const {
    const v16f32 av = splat<v16f32>(a);
    const LaneTable64* tmul = kTable ? &tm : nullptr;
    const LaneTable64* tacc = kTable ? &ta : nullptr;
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      Mask16 f0, f1;
      const v16f32 prod = fast_posit_rne_product_f(pm, av, b.v[v], &f0, tmul);
      const v16f32 next = fast_posit_rne_f(pa, lane_sum_rto(c[v], prod), &f1, tacc);
      if (__builtin_expect(lane_any(lane_or(f0, f1)), 0)) {
        c[v] = redo_lanes(p, c[v], a, brow + 16 * v);
      } else {
        c[v] = next;
      }
    }
  }
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
};

}  // namespace emu::gemm_detail
