// Small helpers the layer tests share.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/numerics_policy.h"
#include "core/tensor.h"

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
  if (got.size() != want.size())
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (bits(got[i]) != bits(want[i]))
      return "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + " want " +
             std::to_string(want[i]);
  return "";
}

// What rich_tensor draws: each element is an exact zero with probability zero_fraction, else
// +-(1 + a 23-bit fraction) * 2^e with e uniform in [lowest, lowest + binades); optionally the
// middle element is -0.
struct RichValues {
  double zero_fraction = 0.1;
  int binades = 6;
  int lowest = -3;
  bool negative_zero = true;
};

// Values with full 24-bit significands over a few binades and some exact zeros: every rounding
// step of a reduction has something to do, and zero operands exercise the skip rule.
inline Tensor rich_tensor(const Shape& shape, uint64_t seed, RichValues r = {}) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) {
    if (u(rng) < r.zero_fraction) {
      x = 0.0f;
      continue;
    }
    const float m = 1.0f + static_cast<float>(rng() & 0x7fffff) * 0x1p-23f;
    x = std::ldexp(m, static_cast<int>(rng() % static_cast<uint64_t>(r.binades)) + r.lowest) *
        ((rng() & 1) ? -1.0f : 1.0f);
  }
  if (r.negative_zero && !v.empty()) v[v.size() / 2] = -0.0f;
  return Tensor::from_vector(shape, v);
}

}  // namespace emu::test
