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

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "backends/cpu/bcast_operand.h"
#include "numerics/fast_round.h"
#include "numerics/mac.h"

namespace emu::gemm_detail {

// The kernels' vectors: the target's native width (the build's -march), so that
// every vector lives in one register. GCC 12 handles 512-bit vector types on an
// AVX2 target by moving them through memory, which made the kernels several
// times slower there than with 256-bit types.
#if defined(__AVX512F__)
using VF = v16f32;  // binary32 lanes
using VU = v16u32;
using VI = v16i32;
constexpr bool kWideVectors = true;
#else
using VF = v8f32;
using VU = v8u32;
using VI = v8i32;
constexpr bool kWideVectors = false;
#endif
using VD = NativeF64;  // binary64 lanes, half as many (numerics/fast_round_lanes.h)
using VMask = typename LaneTraits<VF>::Mask;
constexpr int kLanes = static_cast<int>(sizeof(VF) / sizeof(float));  // 16 or 8
constexpr int kHalfLanes = kLanes / 2;

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

// Two binary64 vectors of binary32 values -> one binary32 vector (exact).
inline VF narrow_concat(VD lo, VD hi) {
#if defined(__AVX512F__)
  const v8f32 l = __builtin_convertvector(lo, v8f32);
  const v8f32 h = __builtin_convertvector(hi, v8f32);
  return __builtin_shufflevector(l, h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#else
  const v4f32 l = __builtin_convertvector(lo, v4f32);
  const v4f32 h = __builtin_convertvector(hi, v4f32);
  return __builtin_shufflevector(l, h, 0, 1, 2, 3, 4, 5, 6, 7);
#endif
}

// One term of mac_reduce's loop (numerics/mac.h) for a policy without :sr in
// mul and acc: the reference the kernels fall back to, lane by lane.
inline double ref_step(const MacPolicy& p, double acc, float a, float b) { return mac_term(p, acc, a, b); }

// All lanes of one accumulator vector redone with ref_step (a flagged lane is
// rare, so the whole vector is recomputed). old: the lanes before the term.
template <class V, class BElem>
[[gnu::noinline, gnu::cold]] V redo_lanes(const MacPolicy& p, V old, float a, const BElem* b) {
  constexpr int kN = sizeof(V) / sizeof(old[0]);
  V next = old;
  for (int l = 0; l < kN; ++l)
    next[l] = static_cast<decltype(+old[0])>(ref_step(p, old[l], a, static_cast<float>(b[l])));
  return next;
}

// ---------------------------------------------------------------------------
// The loop shared by all kernels. K supplies: MR, NR, NV (= NR / kLanes
// accumulator vectors per row), AccV, AElem/BElem/Acc, a BRow type with
// load(bp), and step<kChecked>(a, brow, acc_row, bp_row) updating the NV
// vectors of one row. kChecked = false: the caller knows that no lane can be
// flagged (the operands bound every product below the flag threshold), and the
// kernel may skip the test.
//
// The other forms run K::step_form<kForm>(&a, brow, acc_row, row) (a by its
// address, which the instructions read as a broadcast: BcastF), cheaper
// product roundings where the caller has checked more about the operands
// (ProductForms below):
// Form::Normal (K::kNormalPath): K::normal_ok (no product in the subnormal
// binades), so the kernel may leave out what only such products need;
// Form::Short (K::kShortPath): moreover the operands have together at most
// K::short_bits() significant bits; Form::ShortSub (K::kShortSubPath): such
// short operands without normal_ok's floor (K::sub_ok); Form::ShortSteps: Short at
// the steps k whose bit is set in short_steps (bit k % 64 of word k / 64: the
// floor holds there), ShortSub at the others, the accumulators staying in
// registers throughout (gemm.cpp sets the bits in runs, so the branch predicts);
// Form::Coarse (K::kCoarsePath): Normal's conditions and K::coarse_ok, with
// the coarse operands of the panels (K::coarse_a, K::coarse_b) in `coarse`,
// laid out as ap and bp.
enum class Form { General, Normal, Short, ShortSub, ShortSteps, Coarse };
template <class AElem, class BElem>
struct CoarsePanels {
  const AElem* a = nullptr;
  const BElem* b = nullptr;
};
template <bool kChecked, Form kForm = Form::General, class K>
inline void micro_loop(const K& kern, const typename K::AElem* ap, const typename K::BElem* bp, int64_t kc,
                       typename K::Acc* acc, [[maybe_unused]] const uint64_t* short_steps = nullptr,
                       [[maybe_unused]] CoarsePanels<typename K::AElem, typename K::BElem> coarse = {}) {
  constexpr int MR = K::MR, NV = K::NV, L = K::NR / NV;
  typename K::AccV c[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) c[r][v] = load_lanes<typename K::AccV>(acc + r * K::NR + v * L);
  for (int64_t k = 0; k < kc; ++k) {
    const typename K::BElem* brow = bp + k * K::NR;
    typename K::BRow b;
    b.load(brow);
    if constexpr (kForm == Form::Coarse) {
      typename K::BRow bc;
      bc.load(coarse.b + k * K::NR);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) kern.step_coarse(ap + k * MR + r, coarse.a + k * MR + r, b, bc, c[r]);
      continue;
    }
    if constexpr (kForm == Form::ShortSteps) {
      if ((short_steps[k / 64] >> (k % 64)) & 1u) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) kern.template step_form<Form::Short>(ap + k * MR + r, b, c[r], r);
      } else {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) kern.template step_form<Form::ShortSub>(ap + k * MR + r, b, c[r], r);
      }
      continue;
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      if constexpr (kForm != Form::General) {
        kern.template step_form<kForm>(ap + k * MR + r, b, c[r], r);
      } else {
        kern.template step<kChecked>(ap[k * MR + r], b, c[r], brow);
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) store_lanes(acc + r * K::NR + v * L, c[r][v]);
}

// T::kNormalPath if present, else false.
template <class T, class = void>
struct HasNormalPath : std::false_type {};
template <class T>
struct HasNormalPath<T, std::void_t<decltype(T::kNormalPath)>> : std::bool_constant<T::kNormalPath> {};
// T::kShortPath if present, else false.
template <class T, class = void>
struct HasShortPath : std::false_type {};
template <class T>
struct HasShortPath<T, std::void_t<decltype(T::kShortPath)>> : std::bool_constant<T::kShortPath> {};
template <class T, class = void>
struct HasShortSubPath : std::false_type {};
template <class T>
struct HasShortSubPath<T, std::void_t<decltype(T::kShortSubPath)>> : std::bool_constant<T::kShortSubPath> {};
template <class T, class = void>
struct HasCoarsePath : std::false_type {};
template <class T>
struct HasCoarsePath<T, std::void_t<decltype(T::kCoarsePath)>> : std::bool_constant<T::kCoarsePath> {};
// T::kPoisonPath if present, else false (KernPosit's poison form).
template <class T, class = void>
struct HasPoisonPath : std::false_type {};
template <class T>
struct HasPoisonPath<T, std::void_t<decltype(T::kPoisonPath)>> : std::bool_constant<T::kPoisonPath> {};

// A row of B: n vectors of V from consecutive elements.
template <class V, int n>
struct BRowOf {
  V v[n];
  template <class T>
  void load(const T* p) {
    constexpr int kN = sizeof(V) / sizeof(T);
#pragma GCC unroll 8
    for (int i = 0; i < n; ++i) v[i] = load_lanes<V>(p + kN * i);
  }
};

// Tile shapes. Each accumulator vector, B vector and temporary wants a
// register: 32 with AVX-512, 16 with AVX2.
//   (a) fp32: 16 x 16 or 8 x 16 on AVX-512 (one vector per row, so that each
//       broadcast A element feeds a single multiply and the compiler folds the
//       broadcast into it: on AMD Zen 4 a separate broadcast took a vector pipe
//       and a 4 x 32 tile ran at about half the multiply/add throughput). The
//       16-row tile loads each B vector for twice as many rows: on an AMD Zen 5
//       core its inner loop ran at 106.8 GMAC/s against the 8-row tile's 87.9
//       (a throwaway loop over 32 packed 256-term panels); gemm.cpp takes the
//       8-row one where 16 would pad many more rows (LeNet-5's 6 channels).
//       6 x 16 on AVX2 (12 accumulators, 2 B vectors, the broadcast).
//   (b)-(e): 4 rows of two vectors (4 x 32 or 4 x 16); the posit kernel, with
//       its many temporaries, 2 x 16 on AVX2. (b) on AVX-512: 8 x 32 (16
//       accumulators): e6m6's normal path 34.6 -> 36.4 GMAC/s in the loop above.
//       (d) on AVX-512: 8 x 32 as well. Its 4 x 32 tile gave 8 vpdpwssd per
//       term pair, each with B as a memory operand (the compiler folds the
//       load), 12 loads for 8 operations of 4-cycle latency: 71 GMAC/s on one
//       Zen 5 core. With 16 accumulators, B in two registers and the A
//       broadcast as the third operand, 161 (bench gemm's int8 512^3, one thread).
//       (e) stays 4 x 32: 8 x 32 ran at the same speed (posit16_1 512^3 on one
//       Zen 5 core, 4.8-5.3 GMAC/s either way in alternating runs).
constexpr int kFp32MR = kWideVectors ? 8 : 6;
constexpr int kFp32TallMR = kWideVectors ? 16 : 6;
constexpr int kFp32NV = kWideVectors ? 1 : 2;

// (a) mul fp32 / acc fp32, RNE. One binary32 multiply is R_fp32 of the exact
// product and one add is R_fp32 of the exact sum (no FMA: -ffp-contract=off).
// Needs finite operands (Inf * 0 would not be skipped); gemm.cpp checks.
template <int kMR = kFp32MR>
struct KernFp32 {
  static constexpr int MR = kMR, NV = kFp32NV, NR = NV * kLanes;
  using AElem = float;
  using BElem = float;
  using Acc = float;
  using AccV = VF;
  using BRow = BRowOf<VF, NV>;
  AElem pack_a(float x) const { return x; }
  BElem pack_b(float x) const { return x; }
  double acc_value(Acc x) const { return x; }
  template <bool kChecked>
  void step(float a, const BRow& b, VF* c, const float*) const {
    const VF av = splat<VF>(a);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) c[v] = c[v] + av * b.v[v];
  }
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
};

// Products of kernels (b) and (c), binary32 lanes: exact products rounded by an
// FMA with the magic constant (exp_bits <= 8, man_bits <= 21) ...
struct ProductF32 {
  static constexpr int NV = 2;
  using AElem = float;
  using BElem = float;
  using BRow = BRowOf<VF, NV>;
  FastIeeeRneF pm;
  // The rounded products of columns kLanes v .. kLanes v + kLanes - 1;
  // *flagged: some lane is outside the kernel's domain (only tested when kChecked).
  template <bool kChecked>
  VF product(float a, const BRow& b, int v, bool* flagged) const {
    VU e;
    const VF r = fast_ieee_rne_product_f<false>(pm, splat<VF>(a), b.v[v], &e);
    if (kChecked) *flagged = lane_any(lane_ge(e, splat<VU>(pm.flag_bits)));
    return r;
  }
  // Products below this bound are never flagged.
  double safe_bound() const { return static_cast<double>(bits_float(pm.flag_bits)); }
  // The same products in fewer operations (fast_ieee_rne_product_normal_f)
  // where none is flagged, every nonzero one is at least 2^emin in magnitude
  // (floor: a lower bound of the nonzero |a b|) and |b| 2^(23 - man_bits) is
  // finite (bmax: the largest |b| as binary32 bits).
  static constexpr bool kNormalPath = true;
  bool normal_ok(double floor, uint32_t bmax) const {
    return floor >= static_cast<double>(bits_float(pm.emin_bits)) &&
           static_cast<double>(bits_float(bmax)) * pm.scale < 0x1p127;
  }
  // Where normal_ok holds and the operands have together at most short_bits()
  // significant bits: fast_ieee_rne_product_short_f, one operation fewer.
  static constexpr bool kShortPath = true;
  int short_bits() const { return static_cast<int>(float_bits(pm.scale) >> 23) - 127; }  // 23 - man_bits
  // The short form without the floor (fast_ieee_rne_product_short_sub_f):
  // needs |b| 2^(23 - man_bits) finite, and pays only with vrangeps.
  static constexpr bool kShortSubPath = kLaneRange;
  bool sub_ok(uint32_t bmax) const { return static_cast<double>(bits_float(bmax)) * pm.scale < 0x1p127; }
  // normal_ok's floor at one step k of a tile: where the nonzero |a| there are at least
  // 2^(ea - 127) and the nonzero |b| at least 2^(eb - 127) (ea, eb: binary32 exponent fields,
  // gemm.cpp's line floors), every nonzero product is at least 2^emin if ea + eb >= floor_fields().
  int floor_fields() const { return static_cast<int>(pm.emin_bits >> 23) + 127; }
  // The rounded products of columns kLanes v .. kLanes v + kLanes - 1 in form F,
  // *a read by the instructions that use it (BcastF).
  template <Form F>
  VF product_form(const float* a, const BRow& b, int v) const {
    const BcastF av{a};
    if constexpr (F == Form::Normal) return fast_ieee_rne_product_normal_f(pm, av, b.v[v]);
    if constexpr (F == Form::Short) return fast_ieee_rne_product_short_f(pm, av, b.v[v]);
    static_assert(F != Form::General, "the general form is product()");
    return fast_ieee_rne_product_short_sub_f(pm, av, b.v[v]);
  }
  // Normal's products in one operation fewer from the operands' coarse copies
  // (fast_ieee_rne_product_coarse_f), which gemm.cpp packs beside the panels
  // where the mul format allows (coarse_format) and normal_ok holds; the
  // largest |a| must be below 2^127 (amax: as binary32 bits), so that its
  // coarse copy is finite. On AMD Zen 4 (two 512-bit operations a cycle, of
  // any kind) a step of the 8 x 32 tile is 64 operations against Normal's 82:
  // 33-34 cycles against 46-50 in a throwaway loop of the forms' instructions.
  static constexpr bool kCoarsePath = true;
  bool coarse_format() const { return fast_ieee_rne_product_coarse_ok(pm); }
  bool coarse_ok(uint32_t amax) const { return amax < 0x7f000000u; }
  float coarse_a(float x) const { return round_away_bits(x, kCoarseBitsA); }
  float coarse_b(float x) const { return round_away_bits(x, kCoarseBitsB) * pm.scale; }
  VF product_coarse(const float* a, const float* ac, const BRow& b, const BRow& bc, int v) const {
    return fast_ieee_rne_product_coarse_f(BcastF{a}, b.v[v], BcastF{ac}, bc.v[v]);
  }
};
// ... or with exact binary64 products in two halves (exp_bits <= 8, man_bits
// 22 and 23, which binary32 lanes cannot serve).
struct ProductRne {
  static constexpr int NV = 2;
  using AElem = double;
  using BElem = double;
  using BRow = BRowOf<VD, 2 * NV>;
  FastIeeeRneD pm;
  template <bool kChecked>
  VF product(double a, const BRow& b, int v, bool* flagged) const {
    using DU = typename LaneTraits<VD>::U;
    const VD av = splat<VD>(a);
    DU e0, e1;
    const VD lo = fast_ieee_rne_d<false>(pm, av * b.v[2 * v], &e0);
    const VD hi = fast_ieee_rne_d<false>(pm, av * b.v[2 * v + 1], &e1);
    if (kChecked) *flagged = lane_any(lane_ge(lane_umax(e0, e1), splat<DU>(pm.flag_bits)));
    return narrow_concat(lo, hi);
  }
  double safe_bound() const { return bits_double(pm.flag_bits); }
};

// What kernels (b) and (c) share: the policy, the products, and which of
// micro_loop's cheaper forms the Product offers (each a constant, a test of
// the operands' bounds for gemm.cpp, and a loop over the kernel's tile).
// Kern: the kernel (CRTP), whose step_form<F> adds the products of form F.
template <class Kern, class Product>
struct ProductForms {
  MacPolicy p;
  Product prod;
  double safe_bound() const { return prod.safe_bound(); }
  static constexpr bool kNormalPath = HasNormalPath<Product>::value;
  static constexpr bool kShortPath = HasShortPath<Product>::value;
  static constexpr bool kShortSubPath = HasShortSubPath<Product>::value;
  bool normal_ok(double floor, uint32_t bmax) const { return prod.normal_ok(floor, bmax); }
  bool coarse_format() const { return prod.coarse_format(); }
  bool coarse_ok(uint32_t amax) const { return prod.coarse_ok(amax); }
  float coarse_a(float x) const { return prod.coarse_a(x); }
  float coarse_b(float x) const { return prod.coarse_b(x); }
  int short_bits() const { return prod.short_bits(); }
  bool sub_ok(uint32_t bmax) const { return prod.sub_ok(bmax); }
  int floor_fields() const { return prod.floor_fields(); }
  template <Form F, class AElem, class BElem, class Acc>
  [[gnu::noinline]] void micro_form(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc,
                                    const uint64_t* short_steps = nullptr) const {
    micro_loop<false, F>(static_cast<const Kern&>(*this), ap, bp, kc, acc, short_steps);
  }
  template <class AElem, class BElem, class Acc>
  [[gnu::noinline]] void micro_coarse(const AElem* ap, const BElem* bp, CoarsePanels<AElem, BElem> coarse,
                                      int64_t kc, Acc* acc) const {
    micro_loop<false, Form::Coarse>(static_cast<const Kern&>(*this), ap, bp, kc, acc, nullptr, coarse);
  }
};

// (b) mul eXmY (RNE) / acc fp32 RNE: rounded products (Product), binary32
// adds. A zero product may come out +0 for -0: the accumulator is never -0
// (it starts at +0, +0 + -0 = +0, and a nonzero sum of binary32 values never
// rounds to 0 in fp32), so either adds nothing. Vectors where a product
// reached the top binade of mul (possible overflow), or Inf/NaN, are redone
// lane by lane.
template <class Product>
struct KernMulF32 : ProductForms<KernMulF32<Product>, Product> {
  static constexpr int MR = kWideVectors ? 8 : 4, NV = Product::NV, NR = NV * kLanes;
  using AElem = typename Product::AElem;
  using BElem = typename Product::BElem;
  using Acc = float;
  using AccV = VF;
  using BRow = typename Product::BRow;
  AElem pack_a(float x) const { return x; }
  BElem pack_b(float x) const { return x; }
  double acc_value(Acc x) const { return x; }
  template <bool kChecked>
  void step(AElem a, const BRow& b, VF* c, const BElem* brow) const {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      bool flagged = false;
      const VF r = this->prod.template product<kChecked>(a, b, v, &flagged);
      if (kChecked && __builtin_expect(flagged, 0)) {
        c[v] = redo_lanes(this->p, c[v], static_cast<float>(a), brow + kLanes * v);
      } else {
        c[v] = c[v] + r;
      }
    }
  }
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
  // micro_loop's other forms (ProductForms): the same binary32 adds, some of
  // them as fma(r, 1, c), the same rounding of the same exact sum (r * 1 is
  // exact), where that moves work from one kind of pipe to the other: the
  // ShortSub form's multiply and FMA issue where multiplies do, its vrangeps,
  // subtract and add where adds do, and on AMD Zen 4 (one 512-bit operation of
  // each kind a cycle) a step of the 8 x 32 tile took 48 cycles for the adds'
  // 48 operations against the multiplies' 34 (a throwaway loop of the form's
  // instructions). With 6 of the 16 adds as FMAs, 43 cycles in that loop;
  // ShortSub tiles of a 256 x 1024 x 576 GEMM on e6m6 operands, one thread:
  // 17.2 -> 19.1 GMAC/s (with every other add as an FMA 18.0, with all of
  // them 15.9). The Normal form (its `and` goes to either kind) gained
  // nothing, the Short form is balanced as it is.
  template <Form F>
  void step_form(const AElem* a, const BRow& b, VF* c, int row) const {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      const VF r = this->prod.template product_form<F>(a, b, v);
      if (F == Form::ShortSub && sum_by_fma(NV * row + v)) {
        VF one = splat<VF>(1.0f);
        __asm__("" : "+v"(one));  // opaque, so that the compiler keeps the FMA
        c[v] = lane_fma(r, one, c[v]);
      } else {
        c[v] = c[v] + r;
      }
    }
  }
  // Products 1, 4 and 6 of every 8 in the step (row-major over the tile's vectors).
  static constexpr bool sum_by_fma(int i) { return i % 8 == 1 || i % 8 == 4 || i % 8 == 6; }
  // Form::Coarse (ProductF32::product_coarse): its multiplies and FMAs, subtracts and adds balance.
  static constexpr bool kCoarsePath = HasCoarsePath<Product>::value;
  void step_coarse(const AElem* a, const AElem* ac, const BRow& b, const BRow& bc, VF* c) const {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) c[v] = c[v] + this->prod.product_coarse(a, ac, b, bc, v);
  }
};

// (b) mul eXmY in any mode but :sr (also :nosub, :sat, fn, finite-only) / acc
// fp32 RNE: exact binary64 products, integer rounding (fast_ieee_d), which
// covers every input. Needs finite operands; gemm.cpp checks.
template <Rounding Mode>
struct KernMulIeee {
  static constexpr int MR = 4, NV = 2, NR = NV * kLanes;
  using AElem = double;
  using BElem = double;
  using Acc = float;
  using AccV = VF;
  using BRow = BRowOf<VD, 2 * NV>;
  FastIeeeD pm;
  AElem pack_a(float x) const { return x; }
  BElem pack_b(float x) const { return x; }
  double acc_value(Acc x) const { return x; }
  template <bool kChecked>
  void step(double a, const BRow& b, VF* c, const double*) const {
    const VD av = splat<VD>(a);
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      const VD lo = fast_ieee_d<Mode>(pm, av * b.v[2 * v]);
      const VD hi = fast_ieee_d<Mode>(pm, av * b.v[2 * v + 1]);
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
struct KernAccIeee : ProductForms<KernAccIeee<Product, kAccWide>, Product> {
  static constexpr int MR = 4, NV = Product::NV, NR = NV * kLanes;
  using AElem = typename Product::AElem;
  using BElem = typename Product::BElem;
  using Acc = float;
  using AccV = VF;
  using BRow = typename Product::BRow;
  FastIeeeRneF32 pa;
  AElem pack_a(float x) const { return x; }
  BElem pack_b(float x) const { return x; }
  double acc_value(Acc x) const { return x; }
  template <bool kChecked>
  void step(AElem a, const BRow& b, VF* c, const BElem* brow) const {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      bool flagged = false;
      const VF r = this->prod.template product<kChecked>(a, b, v, &flagged);
      if (kChecked && __builtin_expect(flagged, 0)) {
        c[v] = redo_lanes(this->p, c[v], static_cast<float>(a), brow + kLanes * v);
      } else {
        c[v] = fast_ieee_rne_f32<false, kAccWide>(pa, c[v] + r);
      }
    }
  }
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
  // micro_loop's other forms (ProductForms): the products' shorter forms, the same sums.
  template <Form F>
  void step_form(const AElem* a, const BRow& b, VF* c, int) const {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v)
      c[v] = fast_ieee_rne_f32<false, kAccWide>(pa, c[v] + this->prod.template product_form<F>(a, b, v));
  }
};

// (c) for bf16 products into a bf16 accumulator where the CPU converts to
// bfloat16 (AVX-512 BF16, chosen at compile time like the int8 kernel). Its
// forms round the binary32 sums with vcvtne2ps2bf16: nearest-even on the bit
// pattern, as fast_ieee_rne_f32 rounds for exp_bits == 8, but a subnormal input
// becomes a zero of its sign. So they ask more than KernAccIeee's normal form
// (normal_ok): every nonzero exact product is at least 2^-119 (kFloor), and the
// accumulators they start from are multiples of 2^-126 (on_grid). Then every
// rounded product r, a bf16 value of at least 2^-119, is a multiple of its step
// 2^(e - 7) >= 2^-126, so every exact sum of accumulator and product is a
// multiple of 2^-126, nonzero ones at least 2^-126 in magnitude: the binary32
// sum is normal (or 0) and converts to R_bf16 of it, which is what KernAccIeee
// computes (the same double rounding), and the result is again a multiple of
// 2^-126. A sum past bf16's range rounds to Inf in both; no NaN arises (finite
// products). The products:
//   - Form::Normal: the FMA form of ProductF32 (any binary32 operands);
//   - Form::Short, where the operands have together at most 24 significant
//     bits (bf16 values: 8 + 8): the binary32 product is then exact, normal
//     (below the flag bound 2^111) or a zero, and converts to R_bf16 of it. A
//     -0 product (the FMA form gives +0) adds nothing to an accumulator that
//     is never -0. With longer operands the binary32 product is itself rounded
//     and its conversion a double rounding (0x1.38283p+0 x 0x1.69aa08p+0:
//     1.71875 instead of 1.7265625; test_gemm has it).
// Elsewhere the base kernel's steps run. Per pair of product vectors, Short: 2
// multiplies, 2 adds, 2 conversions and 4 word permutes (the bfloat16 halves
// back into binary32 lanes); Normal: the FMA form's 8 operations, the adds and
// one conversion with its 2 permutes; KernAccIeee's normal form: 20.
#if defined(__AVX512BF16__) && defined(__AVX512BW__)
#define EMU_GEMM_BF16_KERNEL "AVX-512 BF16 vcvtne2ps2bf16"
#define EMU_GEMM_BF16_CONVERT 1
struct KernBf16 : KernAccIeee<ProductF32, 1> {
  // 8 rows: a row's two sums go through one conversion and two permutes in
  // sequence; 8 rows against 4: 21.9-23.2 against 21.2-21.6 GMAC/s on one
  // core in three alternating runs.
  static constexpr int MR = 8;
  static constexpr double kFloor = 0x1p-119;
  static constexpr bool kShortPath = true, kShortSubPath = false;
  int short_bits() const { return 24; }  // an exact binary32 product
  bool normal_ok(double floor, uint32_t bmax) const {
    return floor >= kFloor && KernAccIeee::normal_ok(floor, bmax);
  }
  // Every accumulator a multiple of 2^-126 (or Inf, or a NaN): at an exponent
  // field e < 24 the fraction's low 24 - e bits are zeros (e = 0: all of them).
  // Branch-free, so that the loop vectorises.
  static bool on_grid(const float* acc) {
    uint32_t off = 0;
    for (int i = 0; i < MR * NR; ++i) {
      const uint32_t u = float_bits(acc[i]), e = (u >> 23) & 0xffu, frac = u & 0x7fffffu;
      off |= static_cast<uint32_t>(e < 24) & static_cast<uint32_t>((frac << (e < 24 ? e + 8 : 0)) != 0);
    }
    return off == 0;
  }
  // R_bf16 of two binary32 vectors of normal values or zeros, as binary32.
  static void round_pair(VF x0, VF x1, VF* r0, VF* r1) {
    const __m512i w = (__m512i)_mm512_cvtne2ps_pbh((__m512)x1, (__m512)x0);  // words 0-15: x0
    // Word 2l + 1 of the result <- word l (x0) or 16 + l (x1); even words zeroed.
    const __m512i lo = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0, 6, 0, 5,
                                        0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
    const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi32(16 << 16));
    *r0 = (VF)_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, lo, w);
    *r1 = (VF)_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, hi, w);
  }
  template <Form F>
  void step_form(const float* a, const BRow& b, VF* c, int) const {
    static_assert((F == Form::Normal || F == Form::Short) && NV == 2, "two forms, pairs of vectors");
    VF r0, r1;
    if constexpr (F == Form::Short) {
      const BcastF av{a};
      round_pair(av * b.v[0], av * b.v[1], &r0, &r1);
    } else {
      r0 = prod.product_form<Form::Normal>(a, b, 0);
      r1 = prod.product_form<Form::Normal>(a, b, 1);
    }
    round_pair(c[0] + r0, c[1] + r1, &c[0], &c[1]);
  }
  // Every loop over this tile shape (the base's steps where normal_ok fails).
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
  template <Form F>
  [[gnu::noinline]] void micro_form(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    // Accumulators from earlier k blocks that other paths left off the grid
    // (bf16 subnormals): the base kernel's step, valid under the flag bound.
    if (!on_grid(acc)) return micro_loop<false>(*this, ap, bp, kc, acc);
    micro_loop<false, F>(*this, ap, bp, kc, acc);
  }
};
#else
#define EMU_GEMM_BF16_KERNEL "the pattern rounding"
#endif

// Two int16 products per 32-bit lane, summed into it: acc + a.lo b.lo + a.hi b.hi
// (no saturation: vpdpwssd, or vpmaddwd + vpaddd, whose pair sum cannot
// overflow for the |ia|, |ib| <= 32767 that gemm.cpp admits). Chosen at compile
// time from the build's -march (the CPU that builds is the CPU that runs).
#if defined(__AVX512VNNI__)
#define EMU_GEMM_INT8_KERNEL "AVX-512 VNNI vpdpwssd"
#elif defined(__AVX512BW__)
#define EMU_GEMM_INT8_KERNEL "AVX-512 BW vpmaddwd"
#elif defined(__AVX512F__)
#define EMU_GEMM_INT8_KERNEL "lane loop"
#elif defined(__AVXVNNI__)
#define EMU_GEMM_INT8_KERNEL "AVX-VNNI vpdpwssd"
#elif defined(__AVX2__)
#define EMU_GEMM_INT8_KERNEL "AVX2 vpmaddwd"
#else
#define EMU_GEMM_INT8_KERNEL "lane loop"
#endif
// (Symmetric in a and b; KernInt passes the broadcast A pair last.)
inline VI dot2_i16(VI acc, VI a, VI b) {
#if defined(__AVX512VNNI__)
  return (VI)_mm512_dpwssd_epi32((__m512i)acc, (__m512i)a, (__m512i)b);
#elif defined(__AVX512BW__)
  return acc + (VI)_mm512_madd_epi16((__m512i)a, (__m512i)b);
#elif defined(__AVXVNNI__) && !defined(__AVX512F__)
  return (VI)_mm256_dpwssd_avx_epi32((__m256i)acc, (__m256i)a, (__m256i)b);
#elif defined(__AVX2__) && !defined(__AVX512F__)
  return acc + (VI)_mm256_madd_epi16((__m256i)a, (__m256i)b);
#else
  VI r;
  for (int i = 0; i < kLanes; ++i) {
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
  static constexpr int MR = kWideVectors ? 8 : 6, NV = 2, NR = NV * kLanes, kKGroup = 2;
  using AElem = int32_t;  // (ia_k, ia_k+1) as int16 halves
  using BElem = int32_t;
  using Acc = int32_t;
  using AccV = VI;
  using BRow = BRowOf<VI, NV>;
  float a_scale = 1.0f, b_scale = 1.0f;  // 2^fa, 2^fb
  double acc_unit = 1.0;                 // 2^-(fa + fb)
  static int32_t pair(int32_t lo, int32_t hi) {
    return static_cast<int32_t>((static_cast<uint32_t>(hi) << 16) | (static_cast<uint32_t>(lo) & 0xffffu));
  }
  // A staged block of kc terms x kWidth indices (term k at stage + k * kWidth;
  // indices from `used` on and the padding term kc are zeroed here, so stage
  // holds kc + 1 rows) as ceil(kc / 2) rows of pairs:
  //   dst[q * kWidth + l] = pair(x(2q, l) * scale, x(2q + 1, l) * scale)
  // in loops that vectorise (the scaled values are integers, so the
  // truncating conversion is exact).
  template <int kWidth>
  static void pack_pairs(float* stage, int64_t kc, int64_t used, float scale, int32_t* dst) {
    if (used < kWidth)
      for (int64_t k = 0; k < kc; ++k) std::fill(stage + k * kWidth + used, stage + (k + 1) * kWidth, 0.0f);
    if (kc % 2 != 0) std::fill(stage + kc * kWidth, stage + (kc + 1) * kWidth, 0.0f);
    for (int64_t q = 0; q < (kc + 1) / 2; ++q) {
      const float* lo = stage + 2 * q * kWidth;
      const float* hi = lo + kWidth;
      int32_t* out = dst + q * kWidth;
#pragma GCC unroll 16
      for (int l = 0; l < kWidth; ++l)
        out[l] = pair(static_cast<int32_t>(lo[l] * scale), static_cast<int32_t>(hi[l] * scale));
    }
  }
  void pack_a_block(float* stage, int64_t kc, int64_t rows, int32_t* dst) const {
    pack_pairs<MR>(stage, kc, rows, a_scale, dst);
  }
  void pack_b_block(float* stage, int64_t kc, int64_t cols, int32_t* dst) const {
    pack_pairs<NR>(stage, kc, cols, b_scale, dst);
  }
  double acc_value(Acc x) const { return static_cast<double>(x) * acc_unit; }
  template <bool kChecked>
  void step(int32_t a, const BRow& b, VI* c, const int32_t*) const {
    const VI av = splat<VI>(a);
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) c[v] = dot2_i16(c[v], b.v[v], av);
  }
  template <bool kChecked = true>
  [[gnu::noinline]] void micro(const AElem* ap, const BElem* bp, int64_t kc, Acc* acc) const {
    micro_loop<kChecked>(*this, ap, bp, kc, acc);
  }
};

// (e) mul and acc posits (fast_posit_rne_f_supported, RNE): exact products
// rounded by fast_posit_rne_product_f (FMA with the magic constant), sums
// rounded to odd (lane_sum_rto) and then by fast_posit_rne_f, a vector at a
// time. Lanes outside the uniform-grid binades (e.g. products below 2^-24 for
// posit16_1, which are not that rare) are redone per vector with the
// reference step. A posit zero is +0, so the accumulator is never -0 and zero
// terms change nothing.
// C by table lookup (FastPositRneF::has_table for both formats): one vpermi2w on
// AVX-512 BW; elsewhere the arithmetic is cheaper than a lookup per lane.
#if defined(__AVX512BW__)
constexpr bool kPositTableLookup = true;
#else
constexpr bool kPositTableLookup = false;
#endif
template <bool kTable>
struct KernPosit {
  static constexpr int MR = kWideVectors ? 4 : 2, NV = 2, NR = NV * kLanes;
  using AElem = float;
  using BElem = float;
  using Acc = float;
  using AccV = VF;
  using BRow = BRowOf<VF, NV>;
  MacPolicy p;
  FastPositRneF pm, pa;
  LaneTable64 tm, ta;  // C lookup tables in registers (kTable)
  // The poison form (kTable; fast_posit_rne_poison_f): no flags, no mask of
  // the exponent fields, no branch; a tile whose accumulators end up NaN is
  // run again by micro<true> from the accumulators as they were (micro_poison
  // stores nothing then). Usable where both formats allow it (poison_usable)
  // and a tile's operands keep the products' binary32 exponent fields inside
  // mul's served window (poison_ok).
  static constexpr bool kPoisonPath = kTable;
  bool poison_usable = false;
  FastPositPoison qm, qa;  // the windows (the tables' source)
  LaneTable64 tqm, tqa;
  // poison_ok's bounds: mul's window as products' magnitudes.
  double poison_bound = 0.0, poison_floor = HUGE_VAL;
  KernPosit(const MacPolicy& policy, const FastPositRneF& mul, const FastPositRneF& acc)
      : p(policy),
        pm(mul),
        pa(acc),
        tm(pm.c_high),
        ta(pa.c_high),
        poison_usable(kTable && poison_sums_ok(policy, mul, acc)),
        qm(poison_usable ? fast_posit_poison_params(mul) : FastPositPoison{}),
        qa(poison_usable ? fast_posit_poison_params(acc) : FastPositPoison{}),
        tqm(qm.c_high),
        tqa(qa.c_high) {
    if (poison_usable) {
      poison_bound = std::ldexp(1.0, static_cast<int>(qm.hi) - 127);
      poison_floor = std::ldexp(1.0, static_cast<int>(qm.lo) - 127);
    }
  }
  // Both formats allow the poison form, and every sum c + p of an acc value
  // (or 0) and a product (or 0) rounded in one of mul's uniform-grid binades
  // (below 2^(pm.hi - 126)) has its round-to-odd value's exponent field
  // inside acc's window: |c + p| <= maxpos(acc) + 2^(pm.hi - 126) below
  // 2^(qa.hi - 127), and a nonzero |c + p| at least the smaller minpos (every
  // posit is a multiple of its minpos: tests/test_gemm.cpp checks the formats
  // with tables), at least 2^(qa.lo - 127). Round to odd stays between the
  // exact sum's neighbours, so its field does too.
  static bool poison_sums_ok(const MacPolicy& policy, const FastPositRneF& mul, const FastPositRneF& acc) {
    if (!fast_posit_poison_supported(mul) || !fast_posit_poison_supported(acc)) return false;
    const FastPositPoison wa = fast_posit_poison_params(acc);
    const double top = policy.acc.max_finite + std::ldexp(1.0, static_cast<int>(mul.hi) - 126);
    const double finest = std::min(policy.acc.min_positive, policy.mul.min_positive);
    return top < std::ldexp(1.0, static_cast<int>(wa.hi) - 127) &&
           finest >= std::ldexp(1.0, static_cast<int>(wa.lo) - 127);
  }
  // A tile's operands (bound: an upper bound of |a b|, floor: a lower bound of
  // the nonzero |a b|, product_bound / product_floor) keep every nonzero
  // binary32 product's exponent field inside mul's window [qm.lo, qm.hi]:
  // RN is monotone and the window's ends are powers of two.
  bool poison_ok(double bound, double floor) const {
    return poison_usable && bound <= poison_bound && floor >= poison_floor;
  }
  // micro_loop's loop in the poison form. Returns false, with acc untouched,
  // where some accumulator ends NaN (a poisoned C, or a NaR the reference
  // must see); the sums keep no Inf (bounded as in poison_sums_ok).
  [[gnu::noinline]] bool micro_poison(const float* ap, const float* bp, int64_t kc, float* acc) const {
    VF c[MR][NV];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) c[r][v] = load_lanes<VF>(acc + r * NR + v * kLanes);
    for (int64_t k = 0; k < kc; ++k) {
      BRow b;
      b.load(bp + k * NR);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const VF av = splat<VF>(ap[k * MR + r]);
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) {
          const VF prod = fast_posit_rne_product_poison_f(&tqm, av, b.v[v]);
          c[r][v] = fast_posit_rne_poison_f(&tqa, lane_sum_rto(c[r][v], prod));
        }
      }
    }
    // Bit 31 of (exponent field + 1) << 23 is set for exponent field 255 only.
    VU nan_seen = splat<VU>(0u);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) nan_seen |= (lane_cast<VU>(c[r][v]) & 0x7f800000u) + 0x00800000u;
    for (int l = 0; l < kLanes; ++l)
      if (nan_seen[l] & 0x80000000u) return false;
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) store_lanes(acc + r * NR + v * kLanes, c[r][v]);
    return true;
  }
  AElem pack_a(float x) const { return x; }
  BElem pack_b(float x) const { return x; }
  double acc_value(Acc x) const { return x; }
  template <bool kChecked>
  void step(float a, const BRow& b, VF* c, const float* brow) const {
    const VF av = splat<VF>(a);
    const LaneTable64* tmul = kTable ? &tm : nullptr;
    const LaneTable64* tacc = kTable ? &ta : nullptr;
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      VMask f0, f1;
      const VF prod = fast_posit_rne_product_f(pm, av, b.v[v], &f0, tmul);
      const VF next = fast_posit_rne_f(pa, lane_sum_rto(c[v], prod), &f1, tacc);
      if (__builtin_expect(lane_any(lane_or(f0, f1)), 0)) {
        c[v] = redo_lanes(p, c[v], a, brow + kLanes * v);
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
