// How often split:fp32f's range held, per layer (docs/split_mul.md "Blocks in
// and out of range"): for a layer under split:auto or split:fp32f, how many
// reductions (outputs) of its GEMM-shaped ops had every operand inside
// [2^-14, 2^15) (split_auto_in_range), and their terms. Under split:auto that
// is the share of blocks computed as fp32f (the rest ran as fp32b); under
// split:fp32f the rest are the blocks the scheme computed out of its range.
// The backends count; the trainer takes the counts once per epoch.
//
//   MacPolicy p; p.split = SplitMul::Auto; p.stats_slot = split_stats_slot("conv1", p.split);
//   ... mac_gemm(p, ...) counts into the slot ...
//   for (const SplitLayerStats& s : split_stats_take()) ...   // and starts a new period
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numerics/mac.h"

namespace emu {

struct SplitRangeCounts {
  uint64_t in_outputs = 0, out_outputs = 0;  // reductions whose operands were all in range / not
  uint64_t in_terms = 0, out_terms = 0;      // their terms (K per reduction)
  uint64_t outputs() const { return in_outputs + out_outputs; }
  double in_share() const {
    return outputs() ? static_cast<double>(in_outputs) / static_cast<double>(outputs()) : 0.0;
  }
  SplitRangeCounts& operator+=(const SplitRangeCounts& o) {
    in_outputs += o.in_outputs, out_outputs += o.out_outputs, in_terms += o.in_terms,
        out_terms += o.out_terms;
    return *this;
  }
};

struct SplitLayerStats {
  std::string layer;
  SplitMul scheme;  // Auto or Fp32F
  SplitRangeCounts counts;
  // Unit multiplies per output, every term counted (as emutrain cost counts):
  // auto 3 per in-range term (fp32f) and 6 per other term (fp32b); fp32f 3 per term.
  double unit_multiplies_per_output() const;
};

// The slot of a layer (registered on first use; the same name, the same slot).
int split_stats_slot(const std::string& layer, SplitMul scheme);
// Whether a policy's reductions are counted (split:auto or split:fp32f with a slot).
inline bool split_stats_counted(const MacPolicy& p) {
  return !p.mul_exact && (p.split == SplitMul::Auto || p.split == SplitMul::Fp32F) && p.stats_slot >= 0;
}
// Adds to a slot's counts (thread-safe; slot < 0 counts nothing).
void split_stats_add(int slot, const SplitRangeCounts& c);
// The layers with counts since the last take, in registration order, and
// resets them.
std::vector<SplitLayerStats> split_stats_take();

}  // namespace emu
