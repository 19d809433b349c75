// The multiply-accumulate policy of docs/contract.md section 4 as data: which
// formats a reduction rounds its products, sums and result to, its chunks, fused
// runs, table or split multiplier. numerics/mac.h defines the reduction itself;
// this header is all that code holding or passing a policy needs (layers, the
// backend interface), so it does not pull in the arithmetic.
#pragma once

#include <cstdint>

#include "numerics/format.h"
#include "numerics/hd.h"

namespace emu {

// An approximate multiplier's table (docs/approx_mul.md) as plain data: what
// MacPolicy carries and a CUDA kernel would receive with `entries` pointing to a
// device copy. entries == nullptr: no approximate multiplier. The lookup is
// numerics/approx_mul_lut.h.
struct ApproxMulLut {
  const uint16_t* entries = nullptr;  // 2^(2 man_bits) entries, see the top of numerics/approx_mul_lut.h
  int32_t man_bits = 0;               // Y, the fraction bits of the format
  // Binades [fast_emin, fast_emax] in which every (1 + m 2^-Y) 2^e is a value of
  // the format (normal range, less the top binade of "fn" formats).
  int32_t fast_emin = 0;
  int32_t fast_emax = 0;
};

EMU_HD bool has_approx_mul(const ApproxMulLut& lut) { return lut.entries != nullptr; }

// Which split scheme a policy's multiplier uses (None: not split).
// Auto is a policy's choice only: each reduction resolves it to Fp32F or Fp32B
// from its operands (split_auto_scheme) before its first term.
enum class SplitMul : uint8_t { None = 0, Fp32B, Fp32F, Fp32T, Int16, Auto };

struct MacPolicy {
  bool mul_exact = true;  // the product is not rounded (`mul: exact`)
  Format mul;             // product format when !mul_exact (may be accumulator-only)
  Format acc;             // accumulator (may be accumulator-only)
  Format out;             // result format
  int chunk = 0;          // > 0: sums of `chunk` consecutive terms go to acc_outer
  Format acc_outer;       // the second accumulator when chunk > 0 (default fp32)
  // `fused: F` (docs/contract.md section 4.8): > 0: the products of each run of F
  // consecutive terms are summed exactly with acc and rounded once into acc (a
  // tensor core's MMA). Only the reductions of section 4.1 fuse: every policy
  // derived for a sum of section 4.7 clears it (unfused()). chunk % F == 0.
  int fused = 0;
  // `mul: lut:<name>:<format>` (docs/approx_mul.md): when set, the product of a
  // term is the table's approximate product in `mul` (mul_exact is false)
  // instead of R_mul(a b). Set through set_approx_mul() (numerics/approx_mul.h);
  // policies derived for plain sums (mul_exact = true) ignore it.
  ApproxMulLut lut;
  // `mul: split:<scheme>` (docs/contract.md section 5.6): when not None (and
  // mul_exact is false), a term adds the scheme's partial products to acc one at
  // a time; `mul` then holds the unit format (bf16, fp16, tf32, int8) so that
  // no fast path takes it for plain fp32. Set through set_split_mul().
  SplitMul split = SplitMul::None;
  // split:auto: where the backends count the reductions each scheme computed
  // (core/split_stats.h; -1: not counted). Set per layer by NumericsPolicy::resolve.
  int32_t stats_slot = -1;
};

// Whether the products come from something other than R_mul(a b) (a table or a
// split scheme): only mac_term computes them, so every fast kernel that rounds
// products itself steps aside for these policies.
EMU_HD bool custom_mul(const MacPolicy& p) {
  return !p.mul_exact && (has_approx_mul(p.lut) || p.split != SplitMul::None);
}

// p for a sum of docs/contract.md section 4.7 (softmax denominators, norm
// statistics, losses, bias and channel gradients, dots of gradients): those
// never form fused runs (section 4.8), whatever the layer's policy says.
EMU_HD MacPolicy unfused(MacPolicy p) {
  p.fused = 0;
  return p;
}

}  // namespace emu
