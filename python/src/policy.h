// emutrain.Policy's C++ side (python/src/policy.cpp): a NumericsPolicy and the keys it was
// given, in order (for repr and for handing the policy to a recipe).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/numerics_policy.h"

namespace emu::python {

struct Policy {
  struct Override {
    std::string glob, key, value;
  };
  NumericsPolicy policy;
  std::vector<std::pair<std::string, std::string>> defaults;
  std::vector<Override> overrides;

  void set(const std::string& key, const std::string& value);  // checked now (ValueError)
  void set_override(const std::string& glob, const std::string& key, const std::string& value);
  std::string repr() const;
};

}  // namespace emu::python
