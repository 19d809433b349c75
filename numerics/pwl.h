// Piecewise-linear approximations of the non-linear functions (docs/contract.md
// section 9.3, docs/functions.md "Piecewise-linear approximations").
//
//   FunctionApprox t = make_pwl(PwlFunction::Tanh, 3);   // pwl:3 over [-3, 3]
//   FunctionApprox u = parse_function_approx(PwlFunction::Tanh, "pwl:-3,-1,0,1,3");
//   float y = pwl_value(t, arith, x, site, mul_site);     // R(R(slope*x) + intercept)
//
// K pieces between K+1 increasing binary32 breakpoints b_0 < ... < b_K (equally
// spaced over the function's interval for pwl:<K>, or given by the user). The
// values v_k = f(b_k) are the project's exact binary32 function
// (numerics/functions.h). Piece k covers [b_k, b_{k+1}) (the last one also b_K);
// its constants are binary32, computed once on the host in binary64 and rounded
// once to binary32 (round to nearest even):
//   slope_k     = RN32((v_{k+1} - v_k) / (b_{k+1} - b_k))
//   intercept_k = RN32(v_k - slope_k * b_k)
// Outside [b_0, b_K] the function's side rule applies (PwlSide): a constant
// (tanh -1 / +1, sigmoid 0 / 1, exp / gelu / silu 0 below), the identity
// (gelu, silu above: y = x) or the edge piece extended (exp above).
//
// FunctionApprox is a POD of fixed-size arrays: it is passed by value or
// reference into backend ops and, as it is, into CUDA kernels. The evaluation
// below is host+device code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numerics/functions.h"
#include "numerics/hd.h"

namespace emu {

// How a non-linear function is evaluated: the exact binary32 function rounded
// once to the output format, or a piecewise-linear approximation.
enum class FunctionMode : uint8_t { Exact, Pwl };

// The functions that have piecewise-linear approximations (softmax's exp uses exp's).
enum class PwlFunction : uint8_t { Exp, Tanh, Sigmoid, Gelu, Silu };

// What the approximation gives outside [b_0, b_K].
enum class PwlSide : uint8_t {
  Constant,  // a fixed binary32 value (below / above), rounded to the output format
  Identity,  // x itself, rounded to the output format
  Extend,    // the edge piece continued: R(R(slope*x) + intercept) of piece 0 / K-1
};

constexpr int kPwlMaxPieces = 32;

struct FunctionApprox {
  FunctionMode mode = FunctionMode::Exact;
  PwlFunction fn = PwlFunction::Exp;
  PwlSide below_side = PwlSide::Constant, above_side = PwlSide::Constant;
  int32_t pieces = 0;                    // K (Pwl), 0 (Exact)
  float below = 0.0f, above = 0.0f;      // the Constant sides' values
  float breaks[kPwlMaxPieces + 1] = {};  // b_0 .. b_K
  float values[kPwlMaxPieces + 1] = {};  // v_k = f(b_k), binary32
  float slope[kPwlMaxPieces] = {};
  float intercept[kPwlMaxPieces] = {};

  EMU_HD bool pwl() const { return mode == FunctionMode::Pwl; }
};

// The default interval and sides of pwl:<K> for each function.
struct PwlDomain {
  float lo, hi;
  PwlSide below_side, above_side;
  float below, above;
};

// The project's exact binary32 function.
EMU_HD float pwl_exact(PwlFunction f, float x) {
  switch (f) {
    case PwlFunction::Exp:
      return fn_exp(x);
    case PwlFunction::Tanh:
      return fn_tanh(x);
    case PwlFunction::Sigmoid:
      return fn_sigmoid(x);
    case PwlFunction::Gelu:
      return fn_gelu(x);
    case PwlFunction::Silu:
      return fn_silu(x);
  }
  return x;
}

// The piece of x, b_0 <= x <= b_K: the largest k < K with b_k <= x (binary search,
// so the same on every device).
EMU_HD int pwl_piece(const FunctionApprox& fa, float x) {
  int lo = 0, hi = fa.pieces;  // b_lo <= x, and x < b_hi or hi == K
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (fa.breaks[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// The approximation at x in the arithmetic `a` (ElementArith or Fp32Arith of
// core/backend_ops_elementwise.h: each operation's exact result rounded once to
// the output format): inside the interval R(R(slope_k * x) + intercept_k), the
// product at site `mul_site`, the sum at `site`; a Constant or Identity side one
// rounding at `site`. NaN gives R(NaN).
template <class A>
EMU_HD float pwl_value(const FunctionApprox& fa, const A& a, float x, uint32_t site, uint32_t mul_site) {
  const int K = fa.pieces;
  int k;
  if (x < fa.breaks[0]) {
    if (fa.below_side == PwlSide::Constant) return a.round(fa.below, site);
    if (fa.below_side == PwlSide::Identity) return a.round(x, site);
    k = 0;
  } else if (x > fa.breaks[K]) {
    if (fa.above_side == PwlSide::Constant) return a.round(fa.above, site);
    if (fa.above_side == PwlSide::Identity) return a.round(x, site);
    k = K - 1;
  } else if (x <= fa.breaks[K]) {
    k = pwl_piece(fa, x);
  } else {
    return a.round(x, site);  // NaN
  }
  return a.add(a.mul(fa.slope[k], x, mul_site), fa.intercept[k], site);
}

// The derivative of the approximation at x (the backward of a pwl function):
// slope_k inside [b_0, b_K] (the piece of pwl_piece, so b_k takes the slope of
// the piece to its right), 0 on a Constant side, 1 on an Identity side, the edge
// slope on an Extend side; NaN for NaN.
EMU_HD float pwl_slope(const FunctionApprox& fa, float x) {
  const int K = fa.pieces;
  if (x < fa.breaks[0])
    return fa.below_side == PwlSide::Constant   ? 0.0f
           : fa.below_side == PwlSide::Identity ? 1.0f
                                                : fa.slope[0];
  if (x > fa.breaks[K])
    return fa.above_side == PwlSide::Constant   ? 0.0f
           : fa.above_side == PwlSide::Identity ? 1.0f
                                                : fa.slope[K - 1];
  if (x <= fa.breaks[K]) return fa.slope[pwl_piece(fa, x)];
  return x;  // NaN
}

// Host side (numerics/pwl.cpp).
const char* pwl_function_name(PwlFunction f);  // "exp", "tanh", ...
PwlDomain pwl_domain(PwlFunction f);
// pwl:<K>: K+1 breakpoints b_k = RN32(lo + (hi - lo) * k / K) (binary64), 1 <= K <= kPwlMaxPieces.
FunctionApprox make_pwl(PwlFunction f, int pieces);
// User breakpoints (2 to kPwlMaxPieces + 1, finite, strictly increasing) with the function's sides.
FunctionApprox make_pwl(PwlFunction f, const std::vector<float>& breaks);
// "exact", "pwl:<K>" or "pwl:<b_0>,<b_1>,...,<b_K>" (decimal numbers, each rounded to the nearest
// binary32). Throws std::invalid_argument saying what is wrong and naming the bad token.
FunctionApprox parse_function_approx(PwlFunction f, const std::string& value);
// "exact", "pwl:3 [-3, 3]" or "pwl:-3,-1,0,1,3".
std::string describe(const FunctionApprox& fa);

}  // namespace emu
