// The per-element steps of softmax and log-softmax over a row (docs/layers_elementwise.md),
// host+device, each rounding through an arithmetic A (ElementArith or Fp32Arith of
// numerics/element_arith.h) at the sites of numerics/row_sites.h. The caller sets
// the element's draw index first (a.at(r * C + j)); the row reductions between
// the steps are numerics/row_reduce.h's. The CPU loops and the CUDA kernels call
// these, so the formulas have one definition.
//
// Row r of (rows, C), forward:
//   m   = max_j x_j                                    softmax_row_max
//   d_j = R_out(x_j - m), e_j = R_out(exp(d_j))        softmax_shifted_exp
//   s   = sum_j e_j in acc                             row_sum (numerics/row_reduce.h)
//   softmax:     y_j = R_out(e_j / s)                  softmax_value
//   log-softmax: l = R_out(log(binary32(s)))           log_softmax_log (draw index r)
//                y_j = R_out(d_j - l)                  log_softmax_value
// Backward, with y the forward's output:
//   softmax:     gx_j = R_g(y_j * R_g(gy_j - dot))     softmax_grad, dot = sum_j gy_j y_j (row_dot)
//   log-softmax: gx_j = R_g(gy_j - R_g(R_g(exp(y_j)) * S))  log_softmax_grad, S = sum_j gy_j (row_sum)
#pragma once

#include <cstdint>

#include "numerics/functions.h"
#include "numerics/hd.h"
#include "numerics/pwl.h"
#include "numerics/row_sites.h"

namespace emu {

// m = max_j x_j, -Inf for an empty row. NaNs never win the comparison: they do
// not count here and propagate through d_j instead.
EMU_HD float softmax_row_max(const float* x, int64_t C) {
  float m = bits_float(0xff800000u);  // -Inf
  for (int64_t j = 0; j < C; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

// d = R_out(x - m) (site kSub).
template <class A>
EMU_HD float softmax_shift(const A& a, float x, float m) {
  return a.sub(x, m, softmax_site::kSub);
}

// e = R_out(exp(d)) (site kExp) from exp_d = fn_exp(d): the CPU takes fn_exp of a
// row eight lanes at a time (numerics/functions_lanes.h), then rounds.
template <class A>
EMU_HD float softmax_rounded_exp(const A& a, float exp_d) {
  return a.round(exp_d, softmax_site::kExp);
}

// *d = R_out(x - m) (site kSub); returns e = R_out(exp(d)) (site kExp), or with a
// pwl exp R_out(R_out(slope_k d) + intercept_k) (product at kPwlMul, sum at kExp).
template <class A>
EMU_HD float softmax_shifted_exp(const A& a, const FunctionApprox& exp, float x, float m, float* d) {
  using namespace softmax_site;
  *d = softmax_shift(a, x, m);
  return exp.pwl() ? pwl_value(exp, a, *d, kExp, kPwlMul) : softmax_rounded_exp(a, fn_exp(*d));
}

// Softmax: y_j = R_out(e_j / s), s the row sum in the accumulator (site kResult).
template <class A>
EMU_HD float softmax_value(const A& a, float e, double s) {
  return a.div_wide(e, s, softmax_site::kResult);
}

// Log-softmax: l = R_out(log(binary32(s))) (site kLog; the row's rounding, draw index r).
template <class A>
EMU_HD float log_softmax_log(const A& a, double s) {
  return a.round(fn_log(static_cast<float>(s)), softmax_site::kLog);
}

// Log-softmax: y_j = R_out(d_j - l) (site kResult).
template <class A>
EMU_HD float log_softmax_value(const A& a, float d, float l) {
  return a.sub(d, l, softmax_site::kResult);
}

// Softmax backward: gx_j = R_g(y_j * R_g(gy_j - dot)) (sites kStep1, kStep2).
template <class A>
EMU_HD float softmax_grad(const A& a, float y, float gy, float dot) {
  using namespace softmax_site;
  return a.mul(y, a.sub(gy, dot, kStep1), kStep2);
}

// Log-softmax backward from exp_y = fn_exp(y_j): gx_j = R_g(gy_j - R_g(R_g(exp_y) * S))
// (sites kStep1, kStep2, kStep3).
template <class A>
EMU_HD float log_softmax_grad_of_exp(const A& a, float exp_y, float gy, float S) {
  using namespace softmax_site;
  const float prob = a.round(exp_y, kStep1);
  return a.sub(gy, a.mul(prob, S, kStep2), kStep3);
}

// Log-softmax backward: gx_j = R_g(gy_j - R_g(R_g(exp(y_j)) * S)).
template <class A>
EMU_HD float log_softmax_grad(const A& a, float y, float gy, float S) {
  return log_softmax_grad_of_exp(a, fn_exp(y), gy, S);
}

}  // namespace emu
