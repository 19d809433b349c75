#include "train/cost_counts.h"

#include <algorithm>

namespace emu::train {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Forward:
      return "forward";
    case Phase::Backward:
      return "backward";
    case Phase::Update:
      return "update";
  }
  return "?";
}

const char* category_name(Category c) {
  switch (c) {
    case Category::Mac:
      return "mac";
    case Category::MacMasked:
      return "mac_masked";
    case Category::Add:
      return "add";
    case Category::Op:
      return "op";
    case Category::Function:
      return "function";
    case Category::Read:
      return "read_bits";
    case Category::Write:
      return "write_bits";
    case Category::Meta:
      return "meta_bits";
  }
  return "?";
}

void CostCounts::add(const CountKey& key, int64_t n) {
  if (n == 0) return;  // a zero count says nothing and would clutter the tables
  entries_[key] += n;
  if (std::find(layers_.begin(), layers_.end(), key.layer) == layers_.end()) layers_.push_back(key.layer);
}

int64_t CostCounts::sum(const std::function<bool(const CountKey&)>& keep) const {
  int64_t s = 0;
  for (const auto& [k, n] : entries_)
    if (!keep || keep(k)) s += n;
  return s;
}

int64_t CostCounts::total(Category c) const {
  return sum([&](const CountKey& k) { return k.category == c; });
}

int64_t CostCounts::total(Category c, Phase p) const {
  return sum([&](const CountKey& k) { return k.category == c && k.phase == p; });
}

int64_t CostCounts::layer_total(const std::string& layer, Category c, Phase p) const {
  return sum([&](const CountKey& k) { return k.layer == layer && k.category == c && k.phase == p; });
}

void CostCounts::merge(const CostCounts& other) {
  for (const std::string& l : other.layers_)
    if (std::find(layers_.begin(), layers_.end(), l) == layers_.end()) layers_.push_back(l);
  for (const auto& [k, n] : other.entries_) entries_[k] += n;
  for (const auto& [op, n] : other.uncounted) uncounted[op] += n;
}

}  // namespace emu::train
