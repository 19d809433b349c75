// The split:auto counters (core/split_stats.h): one mutex, taken once per op
// call, never per output.
#include "core/split_stats.h"

#include <mutex>

namespace emu {

namespace {
struct Registry {
  std::mutex mutex;
  std::vector<std::pair<std::string, SplitAutoCounts>> slots;
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

int split_stats_slot(const std::string& layer) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.slots.size(); ++i)
    if (r.slots[i].first == layer) return static_cast<int>(i);
  r.slots.emplace_back(layer, SplitAutoCounts{});
  return static_cast<int>(r.slots.size() - 1);
}

void split_stats_add(int slot, const SplitAutoCounts& c) {
  if (slot < 0) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (static_cast<size_t>(slot) >= r.slots.size()) return;
  SplitAutoCounts& t = r.slots[static_cast<size_t>(slot)].second;
  t.fp32f_outputs += c.fp32f_outputs;
  t.fp32b_outputs += c.fp32b_outputs;
  t.fp32f_terms += c.fp32f_terms;
  t.fp32b_terms += c.fp32b_terms;
}

std::vector<std::pair<std::string, SplitAutoCounts>> split_stats_take() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::pair<std::string, SplitAutoCounts>> out;
  for (auto& [name, c] : r.slots) {
    if (c.outputs() > 0) out.emplace_back(name, c);
    c = SplitAutoCounts{};
  }
  return out;
}

}  // namespace emu
