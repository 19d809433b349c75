// A token vocabulary: ids 0..3 are the specials <pad>, <bos>, <eos>, <unk>,
// then the tokens by descending count, ties in ascending bytewise order, so the
// ids are a pure function of the token counts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace emu::data {

constexpr int64_t kPadId = 0;
constexpr int64_t kBosId = 1;
constexpr int64_t kEosId = 2;
constexpr int64_t kUnkId = 3;

class Vocab {
 public:
  // From token sequences: tokens seen fewer than min_freq times are left out,
  // and at most max_size ids in all (specials included; 0 = no limit).
  static Vocab build(const std::vector<std::vector<std::string>>& sequences, int64_t min_freq,
                     int64_t max_size);

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  int64_t id(const std::string& token) const;  // kUnkId when absent
  const std::string& token(int64_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  const std::vector<std::string>& tokens() const { return tokens_; }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace emu::data
