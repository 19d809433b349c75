// StageRound's element operations (numerics/stage_round.h) over rows, a native
// vector of binary64 lanes at a time (8 or 4 elements), for the CPU loops of the batch-norm ops:
//   out[j] = R_f(a[j] op b[j])   (or op the scalar b) for j < n, op in + - *,
// element j drawing at index i0 + j. The bits are StageRound's, element by
// element: a lane whose result the vector code cannot vouch for is recomputed
// by the StageRound itself.
//
// Why it is exact: for IEEE-like formats without :sr, StageRound rounds
// through FastRound (fast_ieee_d, numerics/fast_round.h), whose template takes
// vectors of binary64 lanes as well as scalars. A product of two binary32
// values is exact in binary64, so its lanes are fast_ieee_d of the binary64
// product, as in rounded_mul. A sum is used only where rounded_add would use
// it too: finite, nonzero and exact (TwoSum error 0); every other lane (zero,
// Inf, NaN, inexact sums) goes to the StageRound. Plain fp32 runs the
// StageRound's native operation (fp32::add, sub, mul: one binary32 operation,
// a NaN result made canonical) in one loop per operation, which the compiler
// vectorises; through the per-element switch it took 4.5 ns an element
// (ResNet-18 b32 fp32 batch_norm_normalize, 88 ms a step). :sr formats run the
// StageRound per element.
// tests/test_pool_norm.cpp compares rows against the StageRound per element.
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
      : s_(s), vector_(!s.native && s.fr.on && !s.fr.fp64 && !is_stochastic(s.f)) {}

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
    if (vector_) {
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

  const StageRound& s_;
  bool vector_;
};

}  // namespace emu::cpu_rows
