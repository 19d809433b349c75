// What split:auto chose, per layer (docs/split_mul.md "split:auto"): how many
// reductions (outputs) of the layer's GEMM-shaped ops ran as fp32f and as
// fp32b, and their terms, so a report gives the share of blocks per scheme and
// the unit multiplies per output. The backends count; the trainer takes the
// counts once per epoch.
//
//   MacPolicy p; p.split = SplitMul::Auto; p.stats_slot = split_stats_slot("conv1");
//   ... mac_gemm(p, ...) counts into the slot ...
//   for (auto& [layer, c] : split_stats_take()) ...   // and starts a new period
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace emu {

struct SplitAutoCounts {
  uint64_t fp32f_outputs = 0, fp32b_outputs = 0;  // reductions per scheme
  uint64_t fp32f_terms = 0, fp32b_terms = 0;      // their terms (K per reduction)
  uint64_t outputs() const { return fp32f_outputs + fp32b_outputs; }
  double fp32f_share() const { return outputs() ? static_cast<double>(fp32f_outputs) / outputs() : 0.0; }
  // Unit multiplies per output: 3 per fp32f term, 6 per fp32b term (every term
  // counted, as emutrain cost counts them).
  double unit_multiplies_per_output() const {
    return outputs() ? (3.0 * fp32f_terms + 6.0 * fp32b_terms) / outputs() : 0.0;
  }
};

// The slot of a layer (registered on first use; the same name, the same slot).
int split_stats_slot(const std::string& layer);
// Adds to a slot's counts (thread-safe; slot < 0 counts nothing).
void split_stats_add(int slot, const SplitAutoCounts& c);
// The layers with counts since the last take, in registration order, and
// resets them.
std::vector<std::pair<std::string, SplitAutoCounts>> split_stats_take();

}  // namespace emu
