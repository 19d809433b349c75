// A view of some examples of another dataset: example i of the subset is
// example indices[i] of the base. Augmentation stays keyed by the base's
// example index, so a subset and its base augment an example identically.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace emu::data {

class SubsetDataset : public Dataset {
 public:
  // indices: each in [0, base->size()); `what` says which subset, for describe().
  SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices, std::string what);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Batch get(const std::vector<int64_t>& indices, uint64_t seed, int64_t epoch) const override;
  std::map<std::string, int64_t> meta() const override { return base_->meta(); }
  std::string describe() const override;
  std::vector<std::string> vocab(const std::string& side) const override { return base_->vocab(side); }
  const Dataset& base() const { return *base_; }
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<int64_t> indices_;
  std::string what_;
};

}  // namespace emu::data
