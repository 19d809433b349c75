// The split range counters (core/split_stats.h): one mutex, taken once per op
// call, never per output.
#include "core/split_stats.h"

#include <mutex>

namespace emu {

namespace {
struct Registry {
  std::mutex mutex;
  std::vector<SplitLayerStats> slots;
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

double SplitLayerStats::unit_multiplies_per_output() const {
  if (counts.outputs() == 0) return 0.0;
  const double in = static_cast<double>(counts.in_terms), out = static_cast<double>(counts.out_terms);
  const double units = scheme == SplitMul::Auto ? 3.0 * in + 6.0 * out : 3.0 * (in + out);
  return units / static_cast<double>(counts.outputs());
}

int split_stats_slot(const std::string& layer, SplitMul scheme) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.slots.size(); ++i)
    if (r.slots[i].layer == layer && r.slots[i].scheme == scheme) return static_cast<int>(i);
  r.slots.push_back(SplitLayerStats{layer, scheme, SplitRangeCounts{}});
  return static_cast<int>(r.slots.size() - 1);
}

void split_stats_add(int slot, const SplitRangeCounts& c) {
  if (slot < 0) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (static_cast<size_t>(slot) < r.slots.size()) r.slots[static_cast<size_t>(slot)].counts += c;
}

std::vector<SplitLayerStats> split_stats_take() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<SplitLayerStats> out;
  for (SplitLayerStats& s : r.slots) {
    if (s.counts.outputs() > 0) out.push_back(s);
    s.counts = SplitRangeCounts{};
  }
  return out;
}

}  // namespace emu
