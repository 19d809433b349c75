// StageRound's element operations (numerics/stage_round.h) over rows, a native
// vector at a time, for the CPU loops of the batch-norm ops and the element-wise add:
//   out[j] = R_f(a[j] op b[j])   (or op the scalar b) for j < n, op in + - *,
// element j drawing at index i0 + j. The bits are StageRound's, element by
// element: a lane whose result the vector code cannot vouch for is recomputed
// by the StageRound itself.
//
// Binary32 lanes (16 with AVX-512, 8 with AVX2) for formats that round to
// nearest even with subnormals, exp_bits <= 8 and man_bits <= 21 (e6m6, bf16,
// fp16, fp8, ...), where numerics/fast_round.h has both roundings:
// - a product: fast_ieee_rne_product_f, the FMA with the magic constant, which
//   rounds the exact product once; lanes it flags (the top binade and above,
//   Inf, NaN) go to the StageRound;
// - a sum or difference: the round-to-odd binary32 sum (lane_sum_rto), then
//   fast_ieee_rne_f32. Rounding to odd at 24 bits and then to nearest even at
//   p <= 22 bits rounds the exact sum once (p + 2 <= 24: the odd last bit
//   stands for every bit cut off, so it cannot fake or hide a tie); subnormal
//   binary32 sums are exact. Lanes with an operand that is not finite (or the
//   largest binary32 value) and lanes whose sum is zero (its sign comes from
//   the rounding mode) go to the StageRound, so that no special value depends
//   on how fast_ieee_rne_f32 treats Inf or a saturated round-to-odd sum.
// The e6m6 ResNet-18's batch norm (b32, 2 threads) spent about 260 ms a step
// in the binary64 form below.
//
// Binary64 lanes (8 or 4) for the other IEEE-like formats without :sr, which
// StageRound rounds through FastRound (fast_ieee_d, numerics/fast_round.h),
// whose template takes vectors of binary64 lanes as well as scalars. A product
// of two binary32 values is exact in binary64, so its lanes are fast_ieee_d of
// the binary64 product, as in rounded_mul. A sum is used only where
// rounded_add would use it too: finite, nonzero and exact (TwoSum error 0);
// every other lane (zero, Inf, NaN, inexact sums) goes to the StageRound.
//
// Plain fp32 runs the StageRound's native operation (fp32::add, sub, mul: one
// binary32 operation, a NaN result made canonical) in one loop per operation,
// which the compiler vectorises; through the per-element switch it took 4.5 ns
// an element (ResNet-18 b32 fp32 batch_norm_normalize, 88 ms a step). :sr
// formats run the StageRound per element.
// tests/test_stage_rows.cpp compares rows against the StageRound per element.
#pragma once

#include <cstdint>
#include <cstring>

#include "numerics/fast_round.h"
#include "numerics/stage_round.h"

namespace emu::cpu_rows {

class StageRows {
 public:
  enum class Op { Add, Sub, Mul };

  explicit StageRows(const StageRound& s)
      : s_(s),
        vector_(!s.native && s.fr.on && !s.fr.fp64 && !is_stochastic(s.f)),
        binary32_(!s.native && binary32_lanes(s.f)) {
    if (binary32_) {
      product_ = fast_ieee_rne_f_params(s.f);
      sum_ = fast_ieee_rne_f32_params(s.f);
    }
  }

  // Whether rows in f take the binary32 lanes (both roundings of the header exist for f; RNE only).
  static bool binary32_lanes(const Format& f) {
    return fast_ieee_rne_product_f_supported(f) && fast_ieee_rne_f32_supported(f);
  }

  // out may alias a or b; b is a row, or null with the scalar bs for every element.
  void add(const float* a, const float* b, float bs, float* out, int64_t n, uint64_t i0) const {
    run(Op::Add, a, b, bs, out, n, i0);
  }
  void sub(const float* a, const float* b, float bs, float* out, int64_t n, uint64_t i0) const {
    run(Op::Sub, a, b, bs, out, n, i0);
  }
  void mul(const float* a, const float* b, float bs, float* out, int64_t n, uint64_t i0) const {
    run(Op::Mul, a, b, bs, out, n, i0);
  }

 private:
  float one(Op op, float a, float b, uint64_t i) const {
    switch (op) {
      case Op::Add:
        return s_.add(a, b, i);
      case Op::Sub:
        return s_.sub(a, b, i);
      case Op::Mul:
        break;
    }
    return s_.mul(a, b, i);
  }

  void run(Op op, const float* a, const float* b, float bs, float* out, int64_t n, uint64_t i0) const {
    if (s_.native) {
      native(op, a, b, bs, out, n);
      return;
    }
    int64_t j = 0;
    if (binary32_) {
      j = lanes_binary32(op, a, b, bs, out, n, i0);
    } else if (vector_) {
      // (vector_ excludes :sr)
      visit_fast_mode(s_.fr.mode,
                      [&](auto mode) { j = lanes<decltype(mode)::value>(op, a, b, bs, out, n, i0); });
    }
    for (; j < n; ++j) out[j] = one(op, a[j], b ? b[j] : bs, i0 + static_cast<uint64_t>(j));
  }

  // Plain fp32: StageRound's native operations (numerics/fp32_ops.h), a loop per operation and operand kind.
  static void native(Op op, const float* a, const float* b, float bs, float* out, int64_t n) {
    switch (op) {
      case Op::Add:
        return native_each(a, b, bs, out, n, [](float x, float y) { return fp32::add(x, y); });
      case Op::Sub:
        return native_each(a, b, bs, out, n, [](float x, float y) { return fp32::sub(x, y); });
      case Op::Mul:
        return native_each(a, b, bs, out, n, [](float x, float y) { return fp32::mul(x, y); });
    }
  }
  template <class Fn>
  static void native_each(const float* a, const float* b, float bs, float* out, int64_t n, Fn fn) {
    if (b) {
      for (int64_t j = 0; j < n; ++j) out[j] = fn(a[j], b[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) out[j] = fn(a[j], bs);
    }
  }

  // The whole groups of kL elements (the native binary64 width: 8 with
  // AVX-512, 4 with AVX2); returns how many elements it did.
  template <Rounding Mode>
  int64_t lanes(Op op, const float* a, const float* b, float bs, float* out, int64_t n, uint64_t i0) const {
    using VD = NativeF64;
    using VF = NativeF64AsF32;
    constexpr int kL = kNativeF64Lanes;
    const VD bsplat = splat<VD>(static_cast<double>(bs));
    int64_t j = 0;
    for (; j + kL <= n; j += kL) {
      VF af, bf;
      std::memcpy(&af, a + j, sizeof af);
      if (b) std::memcpy(&bf, b + j, sizeof bf);
      const VD ad = __builtin_convertvector(af, VD);
      const VD bd = b ? __builtin_convertvector(bf, VD) : bsplat;
      VD r;
      bool all = true;
      if (op == Op::Mul) {
        r = fast_ieee_d<Mode>(s_.fr.p, ad * bd);  // the exact product
      } else {
        const VD c = op == Op::Sub ? -bd : bd;  // rounded_add(a, -b) for a difference
        const VD s = ad + c;
        const VD bb = s - ad;
        const VD err = (ad - (s - bb)) + (c - bb);
        const auto ok = (err == 0.0) & (s != 0.0) & (s - s == 0.0);  // exact, nonzero, finite
        r = fast_ieee_d<Mode>(s_.fr.p, s);
        for (int l = 0; l < kL; ++l) all &= ok[l] != 0;
        if (!all) {
          float lanes_a[kL], lanes_b[kL];
          std::memcpy(lanes_a, &af, sizeof lanes_a);
          for (int l = 0; l < kL; ++l) lanes_b[l] = b ? bf[l] : bs;
          for (int l = 0; l < kL; ++l)
            if (!ok[l]) r[l] = one(op, lanes_a[l], lanes_b[l], i0 + static_cast<uint64_t>(j + l));
        }
      }
      const VF rf = __builtin_convertvector(r, VF);
      std::memcpy(out + j, &rf, sizeof rf);
    }
    return j;
  }

  // The whole vectors of binary32 lanes (the header's first form); returns how many elements it did.
  int64_t lanes_binary32(Op op, const float* a, const float* b, float bs, float* out, int64_t n,
                         uint64_t i0) const {
    using F = NativeF32;
    using U = typename LaneTraits<F>::U;
    constexpr int kL = static_cast<int>(sizeof(F) / sizeof(float));
    const F bsplat = splat<F>(bs);
    int64_t j = 0;
    for (; j + kL <= n; j += kL) {
      F av, bv = bsplat;
      std::memcpy(&av, a + j, sizeof av);
      if (b) std::memcpy(&bv, b + j, sizeof bv);
      F r;
      bool redo;
      if (op == Op::Mul) {
        U key;
        r = fast_ieee_rne_product_f<true>(product_, av, bv, &key);
        redo = lane_any(lane_ge(key, splat<U>(product_.flag_bits)));
      } else {
        const F c = op == Op::Sub ? -bv : bv;
        const F s = lane_sum_rto(av, c);
        r = fast_ieee_rne_f32(sum_, s);
        // Redo: |a| or |c| at least the largest binary32 value (Inf, NaN), or s = +-0 (|s| - 1 wraps).
        const U big = lane_umax(lane_umax(lane_cast<U>(av) & 0x7fffffffu, lane_cast<U>(c) & 0x7fffffffu),
                                (lane_cast<U>(s) & 0x7fffffffu) - 1u);
        redo = lane_any(lane_ge(big, splat<U>(0x7f7fffffu)));
      }
      if (redo) {  // rare: the whole vector by the StageRound (out may alias a or b: from the copies)
        float lanes_a[kL], lanes_b[kL];
        std::memcpy(lanes_a, &av, sizeof lanes_a);
        std::memcpy(lanes_b, &bv, sizeof lanes_b);
        for (int l = 0; l < kL; ++l)
          out[j + l] = one(op, lanes_a[l], lanes_b[l], i0 + static_cast<uint64_t>(j + l));
        continue;
      }
      std::memcpy(out + j, &r, sizeof r);
    }
    return j;
  }

  const StageRound& s_;
  bool vector_;
  bool binary32_;
  FastIeeeRneF product_{};
  FastIeeeRneF32 sum_{};
};

}  // namespace emu::cpu_rows
