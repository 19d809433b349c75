#include "data/draws.h"

#include <algorithm>
#include <utility>

namespace emu::data {

std::vector<int64_t> philox_permutation(int64_t n, uint64_t seed, uint64_t stream) {
  std::vector<std::pair<uint64_t, int64_t>> keyed(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t hi = philox_draw(seed, stream, 2 * static_cast<uint64_t>(i));
    uint64_t lo = philox_draw(seed, stream, 2 * static_cast<uint64_t>(i) + 1);
    keyed[static_cast<size_t>(i)] = {(hi << 32) | lo, i};
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = keyed[static_cast<size_t>(i)].second;
  return perm;
}

}  // namespace emu::data
