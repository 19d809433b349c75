// The activation functions of the element-wise layers and their derivatives,
// host+device (docs/layers_elementwise.md): f(x) in binary32, the derivative
// steps rounded through an arithmetic A (ElementArith or Fp32Arith of
// numerics/element_arith.h), and the dropout threshold. One definition that
// both backends call.
#pragma once

#include <cstdint>

#include "numerics/element_arith.h"
#include "numerics/functions.h"
#include "numerics/pwl.h"

namespace emu {

enum class Activation : uint8_t { Relu, Gelu, Silu, Tanh, Sigmoid };

inline const char* activation_name(Activation a) {
  switch (a) {
    case Activation::Relu:
      return "relu";
    case Activation::Gelu:
      return "gelu";
    case Activation::Silu:
      return "silu";
    case Activation::Tanh:
      return "tanh";
    case Activation::Sigmoid:
      return "sigmoid";
  }
  return "?";
}

// activation_forward under pwl: the site of the product R_out(slope_k * x).
constexpr uint32_t kPwlMulSite = 1;

// Dropout drops element i when its 32-bit draw is below p * 2^32 (truncated):
// p = 0 drops nothing, p = 1 everything.
EMU_HD uint64_t dropout_threshold(float p) {
  if (!(p > 0.0f)) return 0;
  if (p >= 1.0f) return uint64_t{1} << 32;
  return static_cast<uint64_t>(static_cast<double>(p) * 4294967296.0);  // exact product, truncated
}

// f(x) in binary32 (numerics/functions.h): the value an activation rounds.
EMU_HD float activation_value(Activation kind, float x) {
  switch (kind) {
    case Activation::Relu: {
      // By bits, not `x <= 0 ? 0 : x`: nvcc compiles that select to max.NaN, whose
      // NaN is the GPU's 0x7fffffff while the CPU keeps the input's payload (the
      // first GPU run, docs/gpu/2026-11-28-c9efc31-h200.md). Every NaN result is
      // the canonical 0x7fc00000, as for the functions of numerics/functions.h;
      // -0 and every negative give +0.
      const uint32_t b = float_bits(x);
      if ((b & 0x7fffffffu) > 0x7f800000u) return bits_float(0x7fc00000u);
      return (b >> 31) != 0u || b == 0u ? 0.0f : x;
    }
    case Activation::Gelu:
      return fn_gelu(x);
    case Activation::Silu:
      return fn_silu(x);
    case Activation::Tanh:
      return fn_tanh(x);
    case Activation::Sigmoid:
      return fn_sigmoid(x);
  }
  return x;
}

// gelu'(x) = Phi(x) + x phi(x) in binary32, in this order:
//   Phi = 0.5 * (1 + erf(x * (1/sqrt 2))),  phi = exp(-0.5 * (x * x)) * (1/sqrt(2 pi)),
// with x phi taken as +0 for |x| >= 16 (where it is below 2^-180) so that
// gelu'(+-Inf) is 1 and 0.
EMU_HD float gelu_derivative(float x) {
  using namespace fp32_op;
  constexpr float kInvSqrt2 = 0x1.6a09e6p-1f;    // 1/sqrt(2)    = 0.70710677 in binary32
  constexpr float kInvSqrt2Pi = 0x1.988454p-2f;  // 1/sqrt(2 pi) = 0.39894229 in binary32
  float phi_cdf = mul(0.5f, add(1.0f, fn_erf(mul(x, kInvSqrt2))));
  if (!(x < 16.0f && x > -16.0f)) return phi_cdf;  // +-Inf: 1 or 0; NaN: NaN from erf
  float density = mul(fn_exp(mul(-0.5f, mul(x, x))), kInvSqrt2Pi);
  return add(phi_cdf, mul(x, density));
}

// silu'(x) = s (1 + x (1 - s)), s = sigmoid(x), in binary32 in this order;
// silu'(+Inf) = 1, silu'(-Inf) = 0.
EMU_HD float silu_derivative(float x) {
  using namespace fp32_op;
  if (x > 0x1.fffffep127f) return 1.0f;   // +Inf
  if (x < -0x1.fffffep127f) return 0.0f;  // -Inf
  float s = fn_sigmoid(x);
  return mul(s, add(1.0f, mul(x, sub(1.0f, s))));
}

// gx for one element, every step rounded into the grads format by `a` (sites
// 0, 1, 2 in the order of the steps). x: the forward's input as read, y: its output,
// gy: the incoming gradient as read.
//   relu:    x > 0 ? gy : +0
//   tanh:    R(gy * R(1 - R(y * y)))
//   sigmoid: R(gy * R(y * R(1 - y)))
//   gelu:    R(gy * R(gelu'(x)))
//   silu:    R(gy * R(silu'(x)))
template <class A>
EMU_HD float activation_grad(Activation kind, const A& a, float x, float y, float gy) {
  switch (kind) {
    case Activation::Relu:
      return x > 0.0f ? gy : 0.0f;
    case Activation::Tanh:
      return a.mul(gy, a.sub(1.0f, a.mul(y, y, 0), 1), 2);
    case Activation::Sigmoid:
      return a.mul(gy, a.mul(y, a.sub(1.0f, y, 0), 1), 2);
    case Activation::Gelu:
      return a.mul(gy, a.round(gelu_derivative(x), 0), 1);
    case Activation::Silu:
      return a.mul(gy, a.round(silu_derivative(x), 0), 1);
  }
  return gy;
}

// gx for one element of a pwl activation: the derivative of the approximation,
// R(gy * slope) at site 0 (0 on a constant side, 1 on an identity side).
template <class A>
EMU_HD float activation_pwl_grad(const FunctionApprox& fn, const A& a, float x, float gy) {
  return a.mul(gy, pwl_slope(fn, x), 0);
}

}  // namespace emu
