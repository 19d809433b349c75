#include "config/args.h"

#include <fmt/format.h>

#include "config/names.h"
#include "config/recipe_error.h"
#include "config/scalar.h"

namespace emu::config {

bool Args::has(const std::string& key) const {
  YAML::Node v = node_[key];
  return v && !v.IsNull();
}

YAML::Node Args::get(const std::string& key) const {
  YAML::Node v = node_[key];
  if (!v || v.IsNull()) throw RecipeError(fmt::format("{}: missing", key_path(where_, key)));
  return v;
}

int64_t Args::integer(const std::string& key) const {
  return parse_int(get(key).Scalar(), key_path(where_, key));
}

double Args::number(const std::string& key) const {
  return parse_number(get(key).Scalar(), key_path(where_, key));
}

bool Args::flag(const std::string& key) const { return parse_bool(get(key).Scalar(), key_path(where_, key)); }

std::string Args::string(const std::string& key) const {
  YAML::Node v = get(key);
  if (!v.IsScalar()) throw RecipeError(fmt::format("{}: expected a string", key_path(where_, key)));
  return v.Scalar();
}

std::vector<int64_t> Args::integers(const std::string& key) const {
  YAML::Node v = get(key);
  std::vector<int64_t> out;
  if (!v.IsSequence())
    throw RecipeError(fmt::format("{}: expected a list of integers", key_path(where_, key)));
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(parse_int(v[i].Scalar(), fmt::format("{}[{}]", key_path(where_, key), i)));
  return out;
}

}  // namespace emu::config
