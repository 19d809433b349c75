// Shared arithmetic of the CPU pooling and batch-norm ops: thread splitting (the CPU thread pool's,
// numerics/parallel_for.h) and the reduction/rounding helpers (plain fp32 through native operations,
// IEEE-like formats through numerics/fast_round.h, everything else through numerics/round.h), each
// proven equal to the scalar definitions by the tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "numerics/fast_round.h"
#include "numerics/parallel_for.h"
#include "numerics/philox.h"

namespace emu::cpu_reduce {

inline float canonical(float v) { return v != v ? static_cast<float>(quiet_nan()) : v; }
inline bool is_binary32(double v) { return static_cast<double>(static_cast<float>(v)) == v; }

// a + b as a binary64 when that is the exact sum and not zero (an exact zero's sign depends on the
// rounding mode): Knuth's TwoSum error is then 0.
inline bool exact_sum(double a, double b, double* s) {
  *s = a + b;
  const double bb = *s - a;
  return (a - (*s - bb)) + (b - bb) == 0.0 && *s != 0.0;
}

// R_f of a binary64 value: the bit kernel of numerics/fast_round.h for IEEE-like formats without :sr
// (the bits of round_value, tests/test_gemm.cpp), round_value otherwise.
class Round {
 public:
  explicit Round(const Format& f)
      : f_(f), fast_(fast_ieee_d_supported(f)), binary32_products_(fast_ieee_rne_product_f_supported(f)) {
    if (fast_) p_ = fast_ieee_d_params(f);
    if (binary32_products_) pf_ = fast_ieee_rne_f_params(f);
  }
  double operator()(double x, uint32_t draw) const {
    double r = 0.0;
    if (fast_ && visit_fast_mode(p_.mode, [&](auto mode) { r = fast_ieee_d<decltype(mode)::value>(p_, x); }))
      return r;
    return round_value(f_, x, draw);
  }
  // R_f(a + b), a and b values of binary64.
  double add(double a, double b, uint32_t draw) const {
    double s;
    if (fast_ && exact_sum(a, b, &s)) return (*this)(s, 0);
    return format_add(f_, a, b, draw);
  }
  bool fast() const { return fast_; }
  const Format& format() const { return f_; }
  // Whether products_or_zero() runs on binary32 lanes (RNE formats of fast_ieee_rne_product_f).
  bool binary32_products() const { return binary32_products_; }

  // out[k] = R_f(a[k] * b[k]) for k < n, or +-0 where a[k] or b[k] is zero (a term mac_reduce skips);
  // binary32 lanes by fast_ieee_rne_product_f (16 with AVX-512, 8 with AVX2), the lanes it flags (the
  // top binade and above, Inf, NaN) by the binary64 rounding. A zero result may be +0 where R_f gives
  // -0 (kSignedZero = false): for sums into an accumulator that is never -0. Needs binary32_products().
  void products_or_zero(const float* a, const float* b, int64_t n, float* out) const {
    using F = NativeF32;
    using U = typename LaneTraits<F>::U;
    constexpr int kL = static_cast<int>(sizeof(F) / sizeof(float));
    auto one = [&](int64_t k) {
      if (a[k] == 0.0f || b[k] == 0.0f) return 0.0f;
      return static_cast<float>((*this)(static_cast<double>(a[k]) * static_cast<double>(b[k]), 0));
    };
    int64_t k = 0;
    for (; k + kL <= n; k += kL) {
      F av, bv;
      std::memcpy(&av, a + k, sizeof av);
      std::memcpy(&bv, b + k, sizeof bv);
      U key;
      const F r = fast_ieee_rne_product_f<false>(pf_, av, bv, &key);
      if (lane_any(lane_ge(key, splat<U>(pf_.flag_bits)))) {
        for (int l = 0; l < kL; ++l) out[k + l] = one(k + l);
        continue;
      }
      // A zero operand: with a finite other one the product is +-0 already; with Inf or NaN the
      // binary32 product is NaN, a flagged lane.
      std::memcpy(out + k, &r, sizeof r);
    }
    for (; k < n; ++k) out[k] = one(k);
  }

  // out[k] = (*this)(a[k] * b[k], 0) for k < n, the exact binary64 products rounded a native vector at a time
  // (fast_ieee_d takes vectors of binary64 lanes). Needs fast().
  void products(const float* a, const float* b, int64_t n, double* out) const {
    switch (p_.mode) {
      case Rounding::NearestEven:
        return products<Rounding::NearestEven>(a, b, n, out);
      case Rounding::TowardZero:
        return products<Rounding::TowardZero>(a, b, n, out);
      case Rounding::Up:
        return products<Rounding::Up>(a, b, n, out);
      case Rounding::Down:
        return products<Rounding::Down>(a, b, n, out);
      case Rounding::NearestAway:
        return products<Rounding::NearestAway>(a, b, n, out);
      case Rounding::Stochastic:
        break;
    }
    for (int64_t k = 0; k < n; ++k)
      out[k] = (*this)(static_cast<double>(a[k]) * static_cast<double>(b[k]), 0);
  }

 private:
  template <Rounding Mode>
  void products(const float* a, const float* b, int64_t n, double* out) const {
    int64_t k = 0;
    using VD = NativeF64;  // binary64 lanes at the native width
    using VF = NativeF64AsF32;
    constexpr int kL = kNativeF64Lanes;
    for (; k + kL <= n; k += kL) {
      VF av, bv;
      std::memcpy(&av, a + k, sizeof av);
      std::memcpy(&bv, b + k, sizeof bv);
      const VD r = fast_ieee_d<Mode>(p_, __builtin_convertvector(av, VD) * __builtin_convertvector(bv, VD));
      std::memcpy(out + k, &r, sizeof r);
    }
    for (; k < n; ++k) out[k] = fast_ieee_d<Mode>(p_, static_cast<double>(a[k]) * static_cast<double>(b[k]));
  }

  Format f_;
  bool fast_;
  bool binary32_products_;
  FastIeeeD p_{};
  FastIeeeRneF pf_{};
};

// R_f of exact + - * / of values, element i drawing at index i of `key` (formats with :sr only). In
// plain fp32 the binary32 operation is that rounding (NaNs made canonical, as round_value does).
class Rounder {
 public:
  Rounder(const Format& f, DrawKey key) : r_(f), key_(key), native_(is_plain_fp32(f)) {}
  float add(float a, float b, uint64_t i) const {
    if (native_) return canonical(a + b);
    return static_cast<float>(r_.add(a, b, draw(i)));
  }
  float sub(float a, float b, uint64_t i) const {
    if (native_) return canonical(a - b);
    return static_cast<float>(r_.add(a, -static_cast<double>(b), draw(i)));
  }
  float mul(float a, float b, uint64_t i) const {
    if (native_) return canonical(a * b);
    return static_cast<float>(r_(static_cast<double>(a) * static_cast<double>(b), draw(i)));  // exact product
  }
  float div(double a, double b, uint64_t i) const {
    if (native_ && is_binary32(a) && is_binary32(b))
      return canonical(static_cast<float>(a) / static_cast<float>(b));
    return static_cast<float>(format_div(r_.format(), a, b, draw(i)));
  }
  float round(double v, uint64_t i) const {
    if (native_ && is_binary32(v)) return static_cast<float>(v);
    return static_cast<float>(r_(v, draw(i)));
  }

 private:
  uint32_t draw(uint64_t i) const {
    return is_stochastic(r_.format()) ? philox_draw(key_.seed, key_.stream, i) : 0;
  }
  Round r_;
  DrawKey key_;
  bool native_;
};

// Reductions of docs/contract.md section 4 left in the last accumulator's format (acc, or acc_outer with
// chunks): sums (mul exact, every b_k = 1) or products a_k * b_k under p.mul. Output o draws at index
// o * sites + site. Plain fp32 runs binary32 operations, IEEE-like formats without :sr the fast
// rounding kernel with mac_reduce's steps; everything else calls mac_reduce.
class Reducer {
 public:
  Reducer(const MacPolicy& p, bool sum, int64_t max_terms)
      : p_(unfused(p)),
        sum_(sum),
        mul_(p.mul),
        acc_(p.acc),
        outer_(p.acc_outer) {  // section 4.7: never fused
    if (sum) {
      p_.mul_exact = true;
      ones_.assign(static_cast<size_t>(max_terms), 1.0f);
    }
    p_.out = p.chunk > 0 ? p.acc_outer : p.acc;
    const bool random = is_stochastic(p.acc) || (!p_.mul_exact && is_stochastic(p.mul)) ||
                        (p.chunk > 0 && is_stochastic(p.acc_outer));
    // An approximate multiplier's or a split scheme's products come from mac_term only (mac_reduce).
    const bool table = custom_mul(p_);
    if (random || table)
      mode_ = Mode::Generic;
    else if (p.chunk == 0 && is_plain_fp32(p.acc))
      mode_ = sum                                     ? Mode::Sum
              : p_.mul_exact                          ? Mode::Fma
              : is_plain_fp32(p.mul)                  ? Mode::Mul
              : mul_.fast() && binary32_values(p.mul) ? Mode::RoundedMul
                                                      : Mode::Ieee;
    else
      mode_ = acc_.fast() ? Mode::Ieee : Mode::Generic;
  }
  double run(const float* a, const float* b, int64_t K, DrawKey key, uint64_t o, uint64_t sites) const {
    float facc = 0.0f;  // binary32: never -0 under round to nearest, so skipped zero terms change nothing
    switch (mode_) {
      // A NaN is made the canonical one, as mac_reduce makes it (the native operations give
      // whatever NaN the hardware produces: x86's default NaN is negative).
      case Mode::Sum:
        for (int64_t k = 0; k < K; ++k) facc = facc + a[k];
        return canonical(facc);
      case Mode::Mul:
        return run_chain(a, b, K);
      case Mode::Fma:  // IEEE fusedMultiplyAdd: R_fp32(acc + exact product), one rounding
        for (int64_t k = 0; k < K; ++k)
          if (a[k] != 0.0f && b[k] != 0.0f) facc = std::fma(a[k], b[k], facc);
        return canonical(facc);
      case Mode::RoundedMul:
        return run_rounded_mul(a, b, K);
      case Mode::Ieee:
        return run_ieee(a, sum_ ? nullptr : b, K);
      case Mode::Generic:
        break;
    }
    auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream, o * sites + site); };
    return mac_reduce(p_, a, sum_ ? ones_.data() : b, K, nullptr, draw);
  }

  // *s1 = r1.run(a1, b1, K, key1, o1, sites) and *s2 = r2.run(a2, b2, K, key2, o2, sites). Where both
  // are chains of binary32 additions (chained()), one loop runs the two chains side by side: each
  // waits on its additions' latency, so two take about the time of one (batch norm's backward sums
  // of gy and gy * xhat per channel, its statistics' sums of two channels).
  static void run_pair(const Reducer& r1, const float* a1, const float* b1, DrawKey key1, uint64_t o1,
                       const Reducer& r2, const float* a2, const float* b2, DrawKey key2, uint64_t o2,
                       int64_t K, uint64_t sites, double* s1, double* s2) {
    if (!r1.chained() || !r2.chained()) {
      *s1 = r1.run(a1, b1, K, key1, o1, sites);
      *s2 = r2.run(a2, b2, K, key2, o2, sites);
      return;
    }
    float f1 = 0.0f, f2 = 0.0f, t1[kChainBlock], t2[kChainBlock];
    for (int64_t k0 = 0; k0 < K; k0 += kChainBlock) {
      const int64_t n = std::min(kChainBlock, K - k0);
      r1.chain_terms(a1 + k0, b1 ? b1 + k0 : nullptr, n, t1);
      r2.chain_terms(a2 + k0, b2 ? b2 + k0 : nullptr, n, t2);
      for (int64_t k = 0; k < n; ++k) {
        f1 = f1 + t1[k];
        f2 = f2 + t2[k];
      }
    }
    *s1 = canonical(f1);
    *s2 = canonical(f2);
  }

  // run_pair over terms that lie in `rows` runs of `len` consecutive floats, run r at r * stride in
  // each array (channel c of an (N, C, S) array from its element c S: rows N, len S, stride C S),
  // read where they lie instead of gathered first: the same terms in the same order, so the same
  // bits. Only where both reductions are chained() (no draws); returns false, having computed
  // nothing, elsewhere.
  static bool run_pair_rows(const Reducer& r1, const float* a1, const float* b1, const Reducer& r2,
                            const float* a2, const float* b2, int64_t rows, int64_t len, int64_t stride,
                            double* s1, double* s2) {
    if (!r1.chained() || !r2.chained()) return false;
    float f1 = 0.0f, f2 = 0.0f, t1[kChainBlock], t2[kChainBlock];
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = r * stride;
      for (int64_t k0 = 0; k0 < len; k0 += kChainBlock) {
        const int64_t n = std::min(kChainBlock, len - k0);
        r1.chain_terms(a1 + at + k0, b1 ? b1 + at + k0 : nullptr, n, t1);
        r2.chain_terms(a2 + at + k0, b2 ? b2 + at + k0 : nullptr, n, t2);
        for (int64_t k = 0; k < n; ++k) {
          f1 = f1 + t1[k];
          f2 = f2 + t2[k];
        }
      }
    }
    *s1 = canonical(f1);
    *s2 = canonical(f2);
    return true;
  }

 private:
  enum class Mode { Generic, Sum, Mul, Fma, RoundedMul, Ieee };
  static constexpr int64_t kChainBlock = 256;

  // Whether run's result is canonical(the binary32 chain acc = acc + t_k from +0), t_k from
  // chain_terms: plain fp32 sums (Sum), fp32 products (Mul), products rounded into a format of
  // binary32 values that products_or_zero rounds (RoundedMul). A skipped term (a zero operand) is
  // a +-0 term, which leaves acc as it is (never -0 under round to nearest).
  bool chained() const {
    return mode_ == Mode::Sum || mode_ == Mode::Mul ||
           (mode_ == Mode::RoundedMul && mul_.binary32_products());
  }
  // The terms t[0 .. n) of chained() for a[0 .. n), b[0 .. n) (b unused by Sum). Mul selects the
  // product or +0 without a branch: ReLU's gradients, half zeros, mispredicted the skip's branch.
  void chain_terms(const float* a, const float* b, int64_t n, float* t) const {
    if (mode_ == Mode::Sum) {
      std::copy_n(a, n, t);
    } else if (mode_ == Mode::Mul) {
      for (int64_t k = 0; k < n; ++k) t[k] = ((a[k] != 0.0f) & (b[k] != 0.0f)) ? a[k] * b[k] : 0.0f;
    } else {
      mul_.products_or_zero(a, b, n, t);
    }
  }
  double run_chain(const float* a, const float* b, int64_t K) const {
    float acc = 0.0f, t[kChainBlock];
    for (int64_t k0 = 0; k0 < K; k0 += kChainBlock) {
      const int64_t n = std::min(kChainBlock, K - k0);
      chain_terms(a + k0, b ? b + k0 : nullptr, n, t);
      for (int64_t k = 0; k < n; ++k) acc = acc + t[k];
    }
    return canonical(acc);
  }

  // Whether every finite value of f is a binary32 value (so a product rounded to f is one).
  static bool binary32_values(const Format& f) {
    return f.family == Family::Ieee && !f.accumulator_only && f.man_bits <= 23 &&
           f.max_finite <= 3.4028234663852886e38 && f.emin - f.man_bits >= -149;
  }

  // run_ieee's steps for a plain fp32 accumulator without chunks and products rounded into a format
  // whose values are binary32 values: R_fp32(acc + p) of two binary32 values is one binary32 addition
  // (acc starts at +0 and a zero product cannot make it -0 under round to nearest), and the products
  // are rounded a block at a time (Round::products). A NaN is made the canonical one, as
  // run_ieee's format_add makes it.
  double run_rounded_mul(const float* a, const float* b, int64_t K) const {
    constexpr int64_t kBlock = kChainBlock;
    if (mul_.binary32_products()) return run_chain(a, b, K);  // skipped terms as +-0 (chained())
    float acc = 0.0f;
    double prod[kBlock];
    for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
      const int64_t n = std::min(kBlock, K - k0);
      mul_.products(a + k0, b + k0, n, prod);
      for (int64_t k = 0; k < n; ++k)
        if (a[k0 + k] != 0.0f && b[k0 + k] != 0.0f) acc = acc + static_cast<float>(prod[k]);
    }
    return canonical(acc);
  }
  // mac_reduce's steps without :sr (b null: every b_k = 1).
  double run_ieee(const float* a, const float* b, int64_t K) const {
    double acc = 0.0, outer = 0.0;
    for (int64_t k = 0; k < K; ++k) {
      if (p_.chunk > 0 && k > 0 && k % p_.chunk == 0) {
        outer = outer_.add(outer, acc, 0);
        acc = 0.0;
      }
      const float bk = b ? b[k] : 1.0f;
      if (a[k] == 0.0f || bk == 0.0f) continue;
      double product = static_cast<double>(a[k]) * static_cast<double>(bk);
      if (!p_.mul_exact) product = mul_(product, 0);
      acc = acc_.add(acc, product, 0);
    }
    return p_.chunk > 0 ? outer_.add(outer, acc, 0) : acc;
  }

  MacPolicy p_;
  bool sum_;
  Round mul_, acc_, outer_;
  Mode mode_ = Mode::Generic;
  std::vector<float> ones_;
};

}  // namespace emu::cpu_reduce
