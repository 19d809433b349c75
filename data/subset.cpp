#include "data/subset.h"

#include <stdexcept>

namespace emu::data {

SubsetDataset::SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices,
                             std::string what)
    : base_(std::move(base)), indices_(std::move(indices)), what_(std::move(what)) {
  for (int64_t i : indices_)
    if (i < 0 || i >= base_->size())
      throw std::out_of_range(what_ + ": example " + std::to_string(i) + " out of range (dataset has " +
                              std::to_string(base_->size()) + ")");
}

Batch SubsetDataset::get(const std::vector<int64_t>& indices, uint64_t seed, int64_t epoch) const {
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (int64_t i : indices) {
    if (i < 0 || i >= size())
      throw std::out_of_range(what_ + ": example " + std::to_string(i) + " out of range (size " +
                              std::to_string(size()) + ")");
    mapped.push_back(indices_[static_cast<size_t>(i)]);
  }
  return base_->get(mapped, seed, epoch);
}

std::string SubsetDataset::describe() const {
  return base_->describe() + "; " + what_ + ": " + std::to_string(size()) + " examples";
}

}  // namespace emu::data
