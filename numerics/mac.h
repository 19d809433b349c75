// The multiply-accumulate reduction of docs/contract.md section 4, defined once.
//
//   a, b: K operands each (used as given) -> y = R_out(sum_k R_mul(a_k b_k))
//
// Layers (matmul, convolution, attention, aggregation) and the calculator's
// `dot` all reduce through this definition, in the canonical order the caller
// lays the operands out in.
#pragma once

#include <type_traits>

#include "numerics/approx_mul_lut.h"
#include "numerics/exact_run.h"
#include "numerics/fused_split.h"
#include "numerics/mac_policy.h"
#include "numerics/round.h"
#include "numerics/split_mul.h"

namespace emu {

// Where each rounding of one reduction takes its random draw under :sr: the
// sites are numbered so that skipping a zero term moves no other draw.
//   term k: product 2k, accumulation 2k+1; chunk c's promotion 2K+c;
//   bias 2K+chunks; output 2K+chunks+1.
struct MacSites {
  EMU_HD static uint64_t product(uint64_t k) { return 2 * k; }
  EMU_HD static uint64_t accumulate(uint64_t k) { return 2 * k + 1; }
};

// Sites of one reduction of K terms, i.e. the stride between the draw indices
// of consecutive outputs (or rows): 2K + chunks + 2, with chunks = ceil(K / chunk)
// (1 when chunk == 0 or K == 0, as in mac_reduce).
EMU_HD uint64_t mac_site_count(int64_t K, int chunk) {
  const uint64_t chunks = chunk > 0 && K > 0 ? static_cast<uint64_t>((K + chunk - 1) / chunk) : 1;
  return 2 * static_cast<uint64_t>(K) + chunks + 2;
}

// One term of the reduction: acc' = R_acc(acc + R_mul(a b)), acc unchanged when
// an operand is zero (skipped); with an approximate multiplier (p.lut, unless a
// derived sum policy set mul_exact) the product is approx_mul_lut(p.lut, p.mul,
// a, b) instead of R_mul(a b); with a split scheme (p.split) the term is
// split_mac_term's (docs/contract.md section 5.6). mac_reduce
// and the fast kernels' lane-by-lane fallback share this definition; the draws
// are read under :sr only (an approximate multiplier's format never has :sr).
// `scheme` is the split scheme the term uses: p.split, or what the reduction
// resolved split:auto to (MacState::split).
EMU_HD double mac_term_split(const MacPolicy& p, SplitMul scheme, double acc, float a, float b,
                             uint32_t mul_draw = 0, uint32_t acc_draw = 0) {
  if (a == 0.0f || b == 0.0f) return acc;
  if (!p.mul_exact && p.split != SplitMul::None) return split_mac_term(scheme, p.acc, acc, a, b);
  if (!p.mul_exact && has_approx_mul(p.lut))
    return add_into(p.acc, acc, approx_mul_lut(p.lut, p.mul, a, b), acc_draw);
  double product = static_cast<double>(a) * static_cast<double>(b);  // exact: 48 bits
  if (!p.mul_exact) product = round_value(p.mul, product, mul_draw);
  return add_into(p.acc, acc, product, acc_draw);
}

EMU_HD double mac_term(const MacPolicy& p, double acc, float a, float b, uint32_t mul_draw = 0,
                       uint32_t acc_draw = 0) {
  return mac_term_split(p, p.split, acc, a, b, mul_draw, acc_draw);
}

// The Draw of a reduction whose policy never draws (no :sr in any of its
// formats): the fast kernels' mac_finish, which then carries no Philox code.
struct NoDraw {
  EMU_HD uint32_t operator()(uint64_t) const { return 0; }
};

// The running sums of one reduction without fused runs (p.fused == 0),
// advanced term by term by mac_step: a kernel keeps one per output across its K
// tiles and gets mac_reduce's bits. A few registers: the 34 limbs of a fused
// run exist only in the kernels that form runs (MacState).
struct MacSums {
  double outer = 0.0;  // +0 in acc_outer (chunked reductions)
  double acc = 0.0;    // +0 in acc
  // split:auto: the scheme this reduction resolved to before its first term
  // (mac_state_for); left Auto, a split term is NaN (a kernel that forgot).
  SplitMul split = SplitMul::Auto;
};

// The running state of any reduction, fused runs included.
struct MacState : MacSums {
  // fused > 0 (docs/contract.md section 4.8): the products of the pending run,
  // run number `run_index` (terms run_index*F ..), not yet in acc.
  ExactRun run;
  int64_t run_index = 0;
};

// Whether a state type can hold a fused run (mac_step and mac_finish take
// either type; with MacSums the policy must not fuse).
template <class State>
constexpr bool kStateHasRun = std::is_same<State, MacState>::value;

// One term of a fused run: its product(s) into s.run exactly (skipped when an
// operand is zero). The products are mac_term_split's: R_mul(a b) (exact under
// `mul: exact`), an approximate multiplier's, or a split scheme's partial
// products (all of them join the run's one exact sum).
EMU_HD void mac_term_fused(const MacPolicy& p, SplitMul scheme, ExactRun& run, float a, float b,
                           uint32_t mul_draw = 0) {
  if (a == 0.0f || b == 0.0f) return;
  if (!p.mul_exact && p.split != SplitMul::None) return fused_split_products(scheme, run, a, b);
  if (!p.mul_exact && has_approx_mul(p.lut)) return run.add(approx_mul_lut(p.lut, p.mul, a, b));
  double product = static_cast<double>(a) * static_cast<double>(b);  // exact: 48 bits
  if (!p.mul_exact) product = round_value(p.mul, product, mul_draw);
  run.add(product);
}

// acc' = R_f(acc + the run's exact sum), one rounding (the run is empty after).
// Wrapping fixed point reduces the total as add_into does (fixed_wrap_reduce).
EMU_HD double fused_round(const Format& f, ExactRun& run, double acc, uint32_t rand) {
  run.add(acc);
  const bool wrap = f.family == Family::Fixed && !f.saturate;
  return round_exact(f, run.take(round_down_zero(f), wrap, f.nbits - f.frac_bits + 1), rand);
}

// The pending run (if any term of it was not skipped) into acc. Its rounding
// draws at the accumulation site of the run's last position (section 4.8).
template <class Draw>
EMU_HD void mac_flush_run(const MacPolicy& p, MacState& s, int64_t K, Draw draw) {
  if (!s.run.active) return;
  const int64_t end = (s.run_index + 1) * p.fused, last = (end < K ? end : K) - 1;
  s.acc = fused_round(p.acc, s.run, s.acc,
                      is_stochastic(p.acc) ? draw(MacSites::accumulate(static_cast<uint64_t>(last))) : 0);
}

// A fresh state for one reduction whose operands are a[0..K), b[0..K): resolves
// split:auto from them (split_auto_scheme), so every reduction decides from its
// own row of A and column of B. Kernels that step terms without arrays resolve
// through split_auto_in_range themselves and set MacState::split.
// State: MacState, or MacSums when p.fused == 0.
template <class State = MacState>
EMU_HD State mac_state_for(const MacPolicy& p, const float* a, const float* b, int64_t K) {
  State s;
  if (!p.mul_exact && p.split == SplitMul::Auto) s.split = split_auto_scheme(a, b, K);
  return s;
}

// Term k of K (k ascending from 0): the chunk promotion when term k starts a new
// chunk, then mac_term unless an operand is zero (skipped, drawing nothing).
// `draw(site)` returns the 32-bit random draw for a site (only called for :sr).
// State: MacState, or MacSums when p.fused == 0.
template <class State, class Draw>
EMU_HD void mac_step(const MacPolicy& p, State& s, int64_t K, int64_t k, float a, float b, Draw draw) {
  // fused: term k of a new run first rounds the previous run into acc (before
  // a chunk's promotion, whose boundary is also a run's).
  if constexpr (kStateHasRun<State>) {
    if (p.fused > 0 && s.run.active && k / p.fused != s.run_index) mac_flush_run(p, s, K, draw);
  }
  if (p.chunk > 0 && k > 0 && k % p.chunk == 0) {
    const int64_t c = k / p.chunk - 1;
    s.outer = add_into(p.acc_outer, s.outer, s.acc,
                       is_stochastic(p.acc_outer) ? draw(2 * static_cast<uint64_t>(K) + c) : 0);
    s.acc = 0.0;
  }
  if (a == 0.0f || b == 0.0f) return;
  if constexpr (kStateHasRun<State>) {
    if (p.fused > 0) {
      s.run_index = k / p.fused;
      mac_term_fused(p, p.split == SplitMul::Auto ? s.split : p.split, s.run, a, b,
                     !p.mul_exact && is_stochastic(p.mul) ? draw(MacSites::product(k)) : 0);
      return;
    }
  }
  s.acc = mac_term_split(p, p.split == SplitMul::Auto ? s.split : p.split, s.acc, a, b,
                         !p.mul_exact && is_stochastic(p.mul) ? draw(MacSites::product(k)) : 0,
                         is_stochastic(p.acc) ? draw(MacSites::accumulate(k)) : 0);
}

// After the K terms: the last chunk's promotion, the bias (may be null), and
// y = R_out(result).
template <class State, class Draw>
EMU_HD double mac_finish(const MacPolicy& p, State& s, int64_t K, const float* bias, Draw draw) {
  if constexpr (kStateHasRun<State>) {
    if (p.fused > 0) mac_flush_run(p, s, K, draw);  // the last run, before the last promotion
  }
  const bool chunked = p.chunk > 0;
  const int64_t chunks = chunked && K > 0 ? (K + p.chunk - 1) / p.chunk : 1;
  const uint64_t tail = 2 * static_cast<uint64_t>(K);
  double acc = s.acc;
  const Format* last = &p.acc;  // a pointer, not a copy: a kernel passes the policy's own format on
  if (chunked) {
    const int64_t c = chunks - 1;
    acc = add_into(p.acc_outer, s.outer, s.acc, is_stochastic(p.acc_outer) ? draw(tail + c) : 0);
    last = &p.acc_outer;
  }
  if (bias) acc = add_into(*last, acc, *bias, is_stochastic(*last) ? draw(tail + chunks) : 0);
  return round_value(p.out, acc, is_stochastic(p.out) ? draw(tail + chunks + 1) : 0);
}

// y = R_out(sum) of one whole reduction: mac_step for k = 0 .. K-1, then
// mac_finish. `bias` may be null.
// State: MacState (any policy), or MacSums for a policy without fused runs (the
// sums of section 4.7: the same bits without the run's 34 limbs in the kernel).
template <class State = MacState, class Draw>
EMU_HD double mac_reduce(const MacPolicy& p, const float* a, const float* b, int64_t K, const float* bias,
                         Draw draw) {
  State s = mac_state_for<State>(p, a, b, K);
  for (int64_t k = 0; k < K; ++k) mac_step(p, s, K, k, a[k], b[k], draw);
  return mac_finish(p, s, K, bias, draw);
}

}  // namespace emu
