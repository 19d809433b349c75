#include "config/names.h"

namespace emu::config {

std::string key_path(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

}  // namespace emu::config
