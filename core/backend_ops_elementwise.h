// Op family: element-wise layers (activations, residual add, dropout), softmax
// and log-softmax over the last dimension, and the losses.
//
// Every formula, rounding and draw site is written down in
// docs/layers_elementwise.md. The ops read their inputs as given: the layer has
// already rounded them into the policy's read formats (layers/layer_io.h).
// `MacPolicy` arguments name the reductions' mul / acc / chunk / acc_outer and,
// in `out`, the format of the op's element-wise results (the layer's out format
// in a forward op, its grads format in a backward op).
//
// Random draws under :sr: rounding site s of an op draws from stream
// key.stream + s (softmax_site, loss_site below; the activations number their
// steps 0, 1, 2 in activation_grad's order); an element-wise rounding of
// element i (row-major over the whole tensor) at index i; a reduction over row r
// at index r * mac_site_count(K, chunk) + its numerics/mac.h site, with
// mac_site_count(K, chunk) = 2K + ceil(K / chunk) + 2 (backends/cpu/gemm.h).
//
// The per-element definitions below (ElementArith, Fp32Arith, the activation
// functions and their derivatives) are host+device code: the CPU loops
// (backends/cpu/*_ops.cpp) call them, and so must a CUDA kernel.
#pragma once

#include <cstdint>

#include "numerics/fast_round.h"
#include "numerics/format.h"
#include "numerics/functions.h"
#include "numerics/mac.h"
#include "numerics/philox.h"
#include "numerics/pwl.h"
#include "numerics/round.h"

// activation_forward   x: (n) -> y: (n); y[i] = R_out(f(x[i])) with f = activation_value (site 0). When
//                      fn.pwl() (gelu, silu, tanh, sigmoid; relu ignores fn): y[i] = pwl_value(fn, x[i])
//                      (numerics/pwl.h): R_out(R_out(slope_k * x[i]) + intercept_k), the product at site
//                      kPwlMulSite, the sum (or a side's one rounding) at site 0.
// activation_backward  x, y: the forward's input and output, gy: (n) -> gx: (n), activation_grad in format g
//                      (sites 0..2). When fn.pwl(): the derivative of the approximation,
//                      gx[i] = R_g(gy[i] * pwl_slope(fn, x[i])) (site 0; activation_pwl_grad).
// elementwise_add      a, b: (n) -> y: (n); y[i] = R_f(a[i] + b[i]), exact sum, one rounding (site 0).
// dropout              x: (n) -> y: (n); element i is kept when
//                      philox_draw(mask_key.seed, mask_key.stream, i) >= dropout_threshold(p), and then
//                      y[i] = R_f(x[i] * scale) (round_key, site 0), else +0. The backward pass is the
//                      same op on the gradient with the same mask_key.
// softmax_forward      x: (rows, C) -> y: (rows, C); softmax (log = false) or log-softmax (true) of each row.
// softmax_forward_fn   softmax_forward with its exp given by `exp` (exact: softmax_forward's bits; pwl:
//                      e_j = pwl_value(exp, d_j), the product at site softmax_site::kPwlMul, the sum at kExp).
// softmax_backward     y: the forward's output, gy: (rows, C) -> gx: (rows, C). The same formulas whatever
//                      the forward's exp (the backward of a pwl softmax is the exact softmax's, from y).
// cross_entropy_forward  logits: (N, C), targets: (N) class indices (exact integers) or ignore_index
//                      -> logp: (N, C) (log-softmax as softmax_forward, sites 0..4), loss: () the mean over
//                      rows whose target != ignore_index of -sum_j q_j logp_j, q_t = q_on, q_j = q_off (j != t).
// cross_entropy_backward logp: (N, C), targets: (N), gloss: () -> glogits: (N, C).
// mse_forward          x, target: (n) -> diff: (n) = R_out(x - target), loss: () = R_out(sum_i diff_i^2 / n).
// mse_backward         diff: (n), gloss: () -> gx: (n) = R_g(diff_i * w), w = R_g(2 gloss / n), and when
//                      gtarget is not null gtarget: (n) = R_g(-(diff_i * w)).
#define EMU_OPS_ELEMENTWISE(X)                                                                                  \
  X(activation_forward,                                                                                         \
    (Activation kind, const FunctionApprox& fn, const Format& out, const Tensor& x, Tensor& y, DrawKey key),    \
    (kind, fn, out, x, y, key))                                                                                 \
  X(activation_backward,                                                                                        \
    (Activation kind, const FunctionApprox& fn, const Format& g, const Tensor& x, const Tensor& y,              \
     const Tensor& gy, Tensor& gx, DrawKey key),                                                                \
    (kind, fn, g, x, y, gy, gx, key))                                                                           \
  X(elementwise_add, (const Format& f, const Tensor& a, const Tensor& b, Tensor& y, DrawKey key),               \
    (f, a, b, y, key))                                                                                          \
  X(dropout,                                                                                                    \
    (float p, float scale, const Format& f, const Tensor& x, Tensor& y, DrawKey mask_key, DrawKey round_key),   \
    (p, scale, f, x, y, mask_key, round_key))                                                                   \
  X(softmax_forward, (const MacPolicy& p, bool log, const Tensor& x, Tensor& y, DrawKey key),                   \
    (p, log, x, y, key))                                                                                        \
  X(softmax_forward_fn,                                                                                         \
    (const MacPolicy& p, bool log, const FunctionApprox& exp, const Tensor& x, Tensor& y, DrawKey key),         \
    (p, log, exp, x, y, key))                                                                                   \
  X(softmax_backward,                                                                                           \
    (const MacPolicy& p, bool log, const Tensor& y, const Tensor& gy, Tensor& gx, DrawKey key),                 \
    (p, log, y, gy, gx, key))                                                                                   \
  X(cross_entropy_forward,                                                                                      \
    (const MacPolicy& p, const Tensor& logits, const Tensor& targets, int64_t ignore_index, float q_on,         \
     float q_off, Tensor& logp, Tensor& loss, DrawKey key),                                                     \
    (p, logits, targets, ignore_index, q_on, q_off, logp, loss, key))                                           \
  X(cross_entropy_backward,                                                                                     \
    (const Format& g, const Tensor& logp, const Tensor& targets, int64_t ignore_index, float q_on, float q_off, \
     const Tensor& gloss, Tensor& glogits, DrawKey key),                                                        \
    (g, logp, targets, ignore_index, q_on, q_off, gloss, glogits, key))                                         \
  X(mse_forward, (const MacPolicy& p, const Tensor& x, const Tensor& target, Tensor& diff, Tensor& loss,        \
                  DrawKey key),                                                                                 \
    (p, x, target, diff, loss, key))                                                                            \
  X(mse_backward,                                                                                               \
    (const Format& g, const Tensor& diff, const Tensor& gloss, Tensor& gx, Tensor* gtarget, DrawKey key),       \
    (g, diff, gloss, gx, gtarget, key))

namespace emu {

enum class Activation : uint8_t { Relu, Gelu, Silu, Tanh, Sigmoid };

inline const char* activation_name(Activation a) {
  switch (a) {
    case Activation::Relu: return "relu";
    case Activation::Gelu: return "gelu";
    case Activation::Silu: return "silu";
    case Activation::Tanh: return "tanh";
    case Activation::Sigmoid: return "sigmoid";
  }
  return "?";
}

// activation_forward under pwl: the site of the product R_out(slope_k * x).
constexpr uint32_t kPwlMulSite = 1;

// Stream offsets (key.stream + site) of the rounding sites of the row ops.
namespace softmax_site {
constexpr uint32_t kSub = 0;      // d_j = R_out(x_j - m)
constexpr uint32_t kExp = 1;      // e_j = R_out(exp(d_j))
constexpr uint32_t kSum = 2;      // s = sum_j e_j (a reduction)
constexpr uint32_t kLog = 3;      // l = R_out(log(s))  (log-softmax)
constexpr uint32_t kResult = 4;   // y_j = R_out(e_j / s) or R_out(d_j - l)
constexpr uint32_t kPwlMul = 8;   // pwl exp: R_out(slope_k * d_j) (its sum at kExp); 8: after loss_site
// Backward.
constexpr uint32_t kReduce = 0;   // dot = sum_j gy_j y_j (softmax) or S = sum_j gy_j (log-softmax)
constexpr uint32_t kStep1 = 1;    // R_g(gy_j - dot) / R_g(exp(y_j))
constexpr uint32_t kStep2 = 2;    // R_g(y_j * t_j) / R_g(p_j * S)
constexpr uint32_t kStep3 = 3;    // log-softmax: R_g(gy_j - u_j)
}  // namespace softmax_site

namespace loss_site {
// cross_entropy_forward uses softmax_site 0..4 for its log-softmax, then:
constexpr uint32_t kRow = 5;      // row_i = sum_j q_j logp_ij (a reduction)
constexpr uint32_t kTotal = 6;    // total = sum_i -row_i, index i
constexpr uint32_t kMean = 7;     // R_out(total / count), index 0
// cross_entropy_backward: w = R_g(gloss / count) at index 0 of kScale; per element:
constexpr uint32_t kScale = 0;
constexpr uint32_t kProb = 1;     // p_j = R_g(exp(logp_j))
constexpr uint32_t kDiff = 2;     // R_g(p_j - q_j)
constexpr uint32_t kGrad = 3;     // R_g(diff * w)
// mse_forward:
constexpr uint32_t kMseDiff = 0;  // diff_i = R_out(x_i - t_i)
constexpr uint32_t kMseSum = 1;   // sum_i diff_i^2 (one reduction, row 0)
constexpr uint32_t kMseMean = 2;  // R_out(total / n)
// mse_backward: w = R_g(2 gloss / n) at kScale, gx_i = R_g(diff_i * w) at kGrad,
// gtarget_i = R_g(-(diff_i * w)) at kTargetGrad.
constexpr uint32_t kTargetGrad = 4;
}  // namespace loss_site

// Dropout drops element i when its 32-bit draw is below p * 2^32 (truncated):
// p = 0 drops nothing, p = 1 everything.
EMU_HD uint64_t dropout_threshold(float p) {
  if (!(p > 0.0f)) return 0;
  if (p >= 1.0f) return uint64_t{1} << 32;
  return static_cast<uint64_t>(static_cast<double>(p) * 4294967296.0);  // exact product, truncated
}

// True when R_f is the identity on binary32 values and every operation of f is
// the native binary32 one (fp32, round to nearest even, subnormals, Inf/NaN).
// Plain binary64 (fp64 = e11m52, round to nearest even, subnormals, Inf/NaN):
// a native binary64 operation is R_fp64 of the exact result.
EMU_HD bool is_native_fp64(const Format& f) {
  return f.family == Family::Ieee && f.exp_bits == 11 && f.man_bits == 52 && f.rounding == Rounding::NearestEven &&
         f.subnormals && !f.saturate && f.specials == Specials::InfNan;
}

// R_f through numerics/fast_round.h (integer rounding of a binary64 bit
// pattern) where f allows it: IEEE-like formats in every mode but :sr, and
// plain fp64 (the identity). Exact for every binary64 input, so a binary64
// value that is the exact result of an operation rounds here with the same
// bits as round_value().
struct FastRound {
  bool on = false;
  bool fp64 = false;  // plain fp64: R is the identity (NaN made the canonical one)
  Rounding mode = Rounding::NearestEven;
  FastIeeeD p{};

  EMU_HD explicit FastRound(const Format& f)
      : on(fast_ieee_d_supported(f) || is_native_fp64(f)), fp64(is_native_fp64(f)), mode(f.rounding) {
    if (on && !fp64) p = fast_ieee_d_params(f);
  }
  EMU_HD double operator()(double x) const {
    if (fp64) return is_nan(x) ? quiet_nan() : x;
    switch (mode) {
      case Rounding::NearestEven: return fast_ieee_d<Rounding::NearestEven>(p, x);
      case Rounding::TowardZero: return fast_ieee_d<Rounding::TowardZero>(p, x);
      case Rounding::Up: return fast_ieee_d<Rounding::Up>(p, x);
      case Rounding::Down: return fast_ieee_d<Rounding::Down>(p, x);
      case Rounding::NearestAway: return fast_ieee_d<Rounding::NearestAway>(p, x);
      default: return quiet_nan();  // not reached: Stochastic is not `on`
    }
  }
  // R_f(x) for an exact x that is only known to lie strictly between the two
  // binary64 neighbours of q = RN64(x) (finite, nonzero). R_f is monotonic, so
  // when both neighbours round to the same bits x does too; false otherwise
  // (x may straddle a rounding boundary of f: the caller rounds exactly).
  EMU_HD bool bracketed(double q, double* r) const {
    const uint64_t u = double_bits(q);
    const double below = (*this)(bits_double(u - 1)), above = (*this)(bits_double(u + 1));
    if (double_bits(below) != double_bits(above)) return false;
    *r = below;
    return true;
  }
};

// Correctly rounded R_f(a + b), R_f(a * b), R_f(a / b) of binary64 operands
// (format values), one rounding of the exact result, the sign of an exact zero
// as numerics/exact_arith.h gives it. Identical to format_add / format_mul /
// format_div (numerics/round.h); `fr` (FastRound(f)) only makes them faster.
EMU_HD double rounded_add(const Format& f, const FastRound& fr, double a, double b, uint32_t rand) {
  if (fr.fp64) return fr(a + b);
  if (fr.on) {
    const double s = a + b;  // RN64; exact when the TwoSum error is 0
    if (s != 0.0 && s - s == 0.0) {
      const double bb = s - a;
      const double err = (a - (s - bb)) + (b - bb);
      if (err == 0.0) return fr(s);
      double r;
      if (fr.bracketed(s, &r)) return r;
    }
  }
  return format_add(f, a, b, rand);
}
// a, b binary32 values: the product is exact in binary64.
EMU_HD double rounded_mul(const Format& f, const FastRound& fr, float a, float b, uint32_t rand) {
  const double prod = static_cast<double>(a) * static_cast<double>(b);
  return fr.on ? fr(prod) : round_value(f, prod, rand);
}
EMU_HD double rounded_div(const Format& f, const FastRound& fr, double a, double b, uint32_t rand) {
  if (fr.fp64) return fr(a / b);
  if (fr.on) {
    const double q = a / b;  // RN64
    double r;
    if (q != 0.0 && q - q == 0.0 && fr.bracketed(q, &r)) return r;
  }
  return format_div(f, a, b, rand);
}

// mac_reduce (numerics/mac.h) without a bias, the same bits, with the roundings
// through FastRound where the policy has no chunks and no :sr (else it is
// mac_reduce itself). Built once per op, used per row.
struct MacRounding {
  MacPolicy p;
  FastRound mul, acc, out;
  bool fast;

  EMU_HD explicit MacRounding(const MacPolicy& policy)
      : p(policy), mul(policy.mul), acc(policy.acc), out(policy.out),
        fast(policy.chunk == 0 && !(!policy.mul_exact && is_stochastic(policy.mul)) && !is_stochastic(policy.acc) &&
             !is_stochastic(policy.out) && !(!policy.mul_exact && has_approx_mul(policy.lut))) {}  // tables: mac_reduce

  template <class Draw>
  EMU_HD double reduce(const float* a, const float* b, int64_t K, Draw draw) const {
    if (!fast) return mac_reduce(p, a, b, K, nullptr, draw);
    double sum = 0.0;  // +0 in acc
    for (int64_t k = 0; k < K; ++k) {
      if (a[k] == 0.0f || b[k] == 0.0f) continue;  // zero operands are skipped
      double prod = static_cast<double>(a[k]) * static_cast<double>(b[k]);
      if (!p.mul_exact) prod = mul.on ? mul(prod) : round_value(p.mul, prod);
      sum = rounded_add(p.acc, acc, sum, prod, 0);
    }
    return out.on ? out(sum) : round_value(p.out, sum);
  }
};

// Arithmetic of the element-wise kernels in one storage format f: each
// operation's exact result rounded once into f (docs/contract.md section 3). Site s
// of the current element (`at(i)`) draws philox_draw(seed, stream + s, i) under
// :sr. Operands are binary32 values; `b` of div_wide may be an accumulator value.
struct ElementArith {
  Format f;
  FastRound fr;
  uint64_t seed = 0, stream = 0, index = 0;

  EMU_HD ElementArith(const Format& format, uint64_t s, uint64_t st) : f(format), fr(format), seed(s), stream(st) {}
  EMU_HD void at(uint64_t i) { index = i; }
  EMU_HD uint32_t draw(uint32_t site) const {
    return is_stochastic(f) ? philox_draw(seed, stream + site, index) : 0u;
  }
  EMU_HD float round(float x, uint32_t site) const {
    return fr.on ? static_cast<float>(fr(x)) : quantize(f, x, draw(site));
  }
  EMU_HD float add(float a, float b, uint32_t site) const {
    return static_cast<float>(rounded_add(f, fr, a, b, draw(site)));
  }
  EMU_HD float sub(float a, float b, uint32_t site) const {
    return static_cast<float>(rounded_add(f, fr, a, -static_cast<double>(b), draw(site)));
  }
  EMU_HD float mul(float a, float b, uint32_t site) const {
    return static_cast<float>(rounded_mul(f, fr, a, b, draw(site)));
  }
  EMU_HD float div_wide(float a, double b, uint32_t site) const {
    return static_cast<float>(rounded_div(f, fr, a, b, draw(site)));
  }
};

// One binary32 operation rounded to nearest even, never fused into an FMA (the
// host build has -ffp-contract=off; the device spells the rounding out).
namespace fp32_op {
using fp32::add;
using fp32::sub;
using fp32::mul;
using fp32::div;
}  // namespace fp32_op

// The same operations when f is plain fp32: a native binary32 operation is R_fp32
// of the exact result, so this gives exactly ElementArith's bits, fast.
struct Fp32Arith {
  EMU_HD void at(uint64_t) {}
  EMU_HD float round(float x, uint32_t) const { return x; }
  EMU_HD float add(float a, float b, uint32_t) const { return fp32_op::add(a, b); }
  EMU_HD float sub(float a, float b, uint32_t) const { return fp32_op::sub(a, b); }
  EMU_HD float mul(float a, float b, uint32_t) const { return fp32_op::mul(a, b); }
  EMU_HD float div_wide(float a, double b, uint32_t) const {  // b: a binary32 value here
    return fp32_op::div(a, static_cast<float>(b));
  }
};

// f(x) in binary32 (numerics/functions.h): the value an activation rounds.
EMU_HD float activation_value(Activation kind, float x) {
  switch (kind) {
    case Activation::Relu: return x <= 0.0f ? 0.0f : x;  // NaN stays NaN, -0 gives +0
    case Activation::Gelu: return fn_gelu(x);
    case Activation::Silu: return fn_silu(x);
    case Activation::Tanh: return fn_tanh(x);
    case Activation::Sigmoid: return fn_sigmoid(x);
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
  if (x > 0x1.fffffep127f) return 1.0f;  // +Inf
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
    case Activation::Relu: return x > 0.0f ? gy : 0.0f;
    case Activation::Tanh: return a.mul(gy, a.sub(1.0f, a.mul(y, y, 0), 1), 2);
    case Activation::Sigmoid: return a.mul(gy, a.mul(y, a.sub(1.0f, y, 0), 1), 2);
    case Activation::Gelu: return a.mul(gy, a.round(gelu_derivative(x), 0), 1);
    case Activation::Silu: return a.mul(gy, a.round(silu_derivative(x), 0), 1);
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
