// The arithmetic of the losses (docs/layers_elementwise.md), host+device: the
// target classes of cross-entropy, the per-element gradient steps, and the
// cross-row totals that make a loss (sequential, in ascending row / element
// order: that order is the definition). The sites are loss_site's
// (numerics/row_sites.h). The CPU loops and the CUDA kernels call these, so the
// formulas have one definition.
//
// cross_entropy_forward, logits (N, C), targets (N):
//   logp = log_softmax(logits)                  numerics/softmax_steps.h, sites 0..4
//   row_i = sum_j R_mul(q_j logp_ij) in acc     row_dot, site kRow (row_draws)
//   loss = R_out(total / count), total = sum_i -row_i in acc over kept rows    cross_entropy_loss
// cross_entropy_backward:
//   w = R_g(gloss / count)                      loss_scale (host)
//   gx_ij = R_g(R_g(R_g(exp(logp_ij)) - q_j) * w), +0 on ignored rows          cross_entropy_grad
// mse_forward:
//   diff_i = R_out(x_i - t_i)                   mse_diff
//   loss = R_out(total / n), total = sum_i R_mul(diff_i diff_i) in acc         mse_loss
// mse_backward:
//   w = R_g(2 gloss / n)                        loss_scale (host, numerator 2 gloss: exact)
//   gx_i = R_g(diff_i * w), gtarget_i = R_g(-(diff_i * w))                     mse_grad, mse_target_grad
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "numerics/element_arith.h"
#include "numerics/functions.h"
#include "numerics/row_reduce.h"
#include "numerics/row_sites.h"

namespace emu {

// A cross-entropy target as a row class: its class index in [0, C), -1 for
// ignore_index (an ignored row), -2 for anything else (an error). Targets are
// exact integers held in binary32.
EMU_HD int64_t target_class(float target, int64_t C, int64_t ignore_index) {
  const double v = target;
  const double mag = v < 0 ? -v : v;
  // Finite (v - v is NaN for Inf and NaN) and integral: every binary64 of 2^52 and above is.
  const bool integral = v - v == 0.0 && (mag >= 0x1p52 || v == static_cast<double>(static_cast<int64_t>(v)));
  if (integral && v == static_cast<double>(ignore_index)) return -1;
  if (integral && v >= 0 && v < static_cast<double>(C)) return static_cast<int64_t>(v);
  return -2;
}

// The targets (N values, row-major) as row classes; throws std::invalid_argument
// naming `op` at the first one that is neither a class index in [0, C) nor ignore_index.
inline std::vector<int64_t> target_classes(const char* op, const std::vector<float>& targets, int64_t C,
                                           int64_t ignore_index) {
  std::vector<int64_t> cls(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    cls[i] = target_class(targets[i], C, ignore_index);
    if (cls[i] == -2)
      throw std::invalid_argument(
          fmt::format("{}: target {} of row {} is not a class index in [0, {}) nor "
                      "ignore_index {}",
                      op, targets[i], i, C, ignore_index));
  }
  return cls;
}

// loss = R_out(total / count), total = sum_i -rows[i] in acc over the rows i < N with
// kept(i), ascending (site kTotal, index i), count the number of kept rows (site kMean,
// index 0). rows[i]: row i's dot product under accumulate_only(p) (a value of acc, or
// acc_outer when chunked).
template <class Kept, class Key>
EMU_HD float cross_entropy_loss(const MacPolicy& p, const double* rows, int64_t N, const Kept& kept,
                                const Key& key) {
  using namespace loss_site;
  double total = 0.0;  // +0 in acc
  int64_t count = 0;
  for (int64_t r = 0; r < N; ++r) {
    if (!kept(r)) continue;
    ++count;
    total = add_into(p.acc, total, -rows[r], draw_at(p.acc, key, kTotal, static_cast<uint64_t>(r)));
  }
  return static_cast<float>(
      format_div(p.out, total, static_cast<double>(count), draw_at(p.out, key, kMean, 0)));
}

// gx_ij = R_g(R_g(R_g(exp_logp) - q_j) * w) (sites kProb, kDiff, kGrad) from exp_logp =
// fn_exp(logp_ij), q_j the row's target weight of class j (q_on for the target class,
// q_off otherwise). The CPU takes fn_exp of a row eight lanes at a time
// (numerics/functions_lanes.h).
template <class A>
EMU_HD float cross_entropy_grad_of_exp(const A& a, float exp_logp, float q, float w) {
  using namespace loss_site;
  const float prob = a.round(exp_logp, kProb);
  return a.mul(a.sub(prob, q, kDiff), w, kGrad);
}

// gx_ij = R_g(R_g(R_g(exp(logp_ij)) - q_j) * w).
template <class A>
EMU_HD float cross_entropy_grad(const A& a, float logp, float q, float w) {
  return cross_entropy_grad_of_exp(a, fn_exp(logp), q, w);
}

// diff_i = R_out(x_i - t_i) (site kMseDiff).
template <class A>
EMU_HD float mse_diff(const A& a, float x, float t) {
  return a.sub(x, t, loss_site::kMseDiff);
}

// loss = R_out(total / n), total = sum_i R_mul(diff_i diff_i) in acc, ascending i, as one
// reduction (row 0 of site kMseSum; site kMseMean, index 0).
template <class Key>
EMU_HD float mse_loss(const MacPolicy& p, const float* diff, int64_t n, const Key& key) {
  using namespace loss_site;
  const MacPolicy acc = accumulate_only(p);
  const double total =
      row_dot(MacRounding(acc), native_dot(acc), diff, diff, n, row_draws(key, kMseSum, 0, n, p.chunk));
  return static_cast<float>(
      format_div(p.out, total, static_cast<double>(n), draw_at(p.out, key, kMseMean, 0)));
}

// gx_i = R_g(diff_i * w) (site kGrad).
template <class A>
EMU_HD float mse_grad(const A& a, float diff, float w) {
  return a.mul(diff, w, loss_site::kGrad);
}

// gtarget_i = R_g(-(diff_i * w)): the exact product negated before its one rounding (site kTargetGrad).
template <class A>
EMU_HD float mse_target_grad(const A& a, float diff, float w) {
  return a.mul(-diff, w, loss_site::kTargetGrad);
}

// The gradient scale of a mean loss: w = R_g(numerator / count) (site kScale, index 0).
template <class Key>
EMU_HD float loss_scale(const Format& g, double numerator, int64_t count, const Key& key) {
  return static_cast<float>(
      format_div(g, numerator, static_cast<double>(count), draw_at(g, key, loss_site::kScale, 0)));
}

}  // namespace emu
