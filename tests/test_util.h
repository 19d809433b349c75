// Small helpers the layer tests share.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/numerics_policy.h"

namespace emu::test {

// A policy from key/value settings, e.g. policy({{"mul", "e5m10"}, {"acc", "e5m10"}}).
inline NumericsPolicy policy(std::initializer_list<std::pair<const char*, const char*>> settings) {
  NumericsPolicy p;
  for (const auto& [k, v] : settings) p.set(k, v);
  return p;
}

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// "" when got and want agree bit for bit, else the first difference.
inline std::string mismatch(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (bits(got[i]) != bits(want[i]))
      return "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + " want " + std::to_string(want[i]);
  return "";
}

}  // namespace emu::test
