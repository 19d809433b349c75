#include "data/vocab.h"

#include <algorithm>

namespace emu::data {

Vocab Vocab::build(const std::vector<std::vector<std::string>>& sequences, int64_t min_freq,
                   int64_t max_size) {
  std::map<std::string, int64_t> counts;
  for (const auto& seq : sequences)
    for (const auto& t : seq) ++counts[t];
  std::vector<std::pair<std::string, int64_t>> ranked;
  for (const auto& [tok, n] : counts)
    if (n >= min_freq) ranked.emplace_back(tok, n);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });

  Vocab v;
  v.tokens_ = {"<pad>", "<bos>", "<eos>", "<unk>"};
  for (const auto& [tok, n] : ranked) {
    if (max_size > 0 && v.size() >= max_size) break;
    if (tok == "<pad>" || tok == "<bos>" || tok == "<eos>" || tok == "<unk>") continue;
    v.tokens_.push_back(tok);
  }
  for (size_t i = 0; i < v.tokens_.size(); ++i) v.ids_[v.tokens_[i]] = static_cast<int64_t>(i);
  return v;
}

int64_t Vocab::id(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? kUnkId : it->second;
}

}  // namespace emu::data
