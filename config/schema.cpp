#include "config/schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace emu::config {
namespace {

const char* kind_name(KeyKind k) {
  switch (k) {
    case KeyKind::Int:
      return "an integer";
    case KeyKind::Number:
      return "a number";
    case KeyKind::Bool:
      return "true or false";
    case KeyKind::String:
      return "a string";
    case KeyKind::Choice:
      return "one of the choices";
    case KeyKind::IntList:
      return "a list of integers";
    case KeyKind::Map:
      return "a mapping";
    case KeyKind::List:
      return "a list";
  }
  return "?";
}

std::string range_text(const KeySpec& k) {
  bool lo = std::isfinite(k.min), hi = std::isfinite(k.max);
  if (lo && hi) return fmt::format(" in [{}, {}]", k.min, k.max);
  if (lo) return fmt::format(" >= {}", k.min);
  if (hi) return fmt::format(" <= {}", k.max);
  return "";
}

void check_range(const KeySpec& k, double v, const std::string& text, const std::string& path) {
  if (v < k.min || v > k.max)
    throw RecipeError(
        fmt::format("{}: {} is out of range (want {}{})", path, text, kind_name(k.kind), range_text(k)));
}

std::string node_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsNull()) return "null";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "?";
}

void check_value(const KeySpec& k, const YAML::Node& v, const std::string& path) {
  auto want_scalar = [&] {
    if (!v.IsScalar())
      throw RecipeError(fmt::format("{}: expected {}, found {}", path, kind_name(k.kind), node_text(v)));
  };
  switch (k.kind) {
    case KeyKind::Int: {
      want_scalar();
      check_range(k, static_cast<double>(parse_int(v.Scalar(), path)), v.Scalar(), path);
      break;
    }
    case KeyKind::Number: {
      want_scalar();
      check_range(k, parse_number(v.Scalar(), path), v.Scalar(), path);
      break;
    }
    case KeyKind::Bool:
      want_scalar();
      parse_bool(v.Scalar(), path);
      break;
    case KeyKind::String:
      want_scalar();
      break;
    case KeyKind::Choice: {
      want_scalar();
      if (std::find(k.choices.begin(), k.choices.end(), v.Scalar()) == k.choices.end())
        throw RecipeError(
            fmt::format("{}: unknown value '{}' (allowed: {})", path, v.Scalar(), join_names(k.choices)));
      break;
    }
    case KeyKind::IntList: {
      if (!v.IsSequence())
        throw RecipeError(
            fmt::format("{}: expected a list of integers such as [64, 32], found {}", path, node_text(v)));
      for (size_t i = 0; i < v.size(); ++i) {
        std::string p = fmt::format("{}[{}]", path, i);
        if (!v[i].IsScalar())
          throw RecipeError(fmt::format("{}: expected an integer, found {}", p, node_text(v[i])));
        check_range(k, static_cast<double>(parse_int(v[i].Scalar(), p)), v[i].Scalar(), p);
      }
      break;
    }
    case KeyKind::Map:
      if (!v.IsMap()) throw RecipeError(fmt::format("{}: expected a mapping, found {}", path, node_text(v)));
      break;
    case KeyKind::List:
      if (!v.IsSequence())
        throw RecipeError(fmt::format("{}: expected a list, found {}", path, node_text(v)));
      break;
  }
}

KeySpec make_key(std::string name, KeyKind kind, std::string def, std::string help) {
  KeySpec k;
  k.name = std::move(name);
  k.kind = kind;
  k.default_value = std::move(def);
  k.help = std::move(help);
  return k;
}

}  // namespace

KeySpec int_key(std::string name, std::string def, std::string help, double min, double max) {
  KeySpec k = make_key(std::move(name), KeyKind::Int, std::move(def), std::move(help));
  k.min = min, k.max = max;
  return k;
}

KeySpec number_key(std::string name, std::string def, std::string help, double min, double max) {
  KeySpec k = make_key(std::move(name), KeyKind::Number, std::move(def), std::move(help));
  k.min = min, k.max = max;
  return k;
}

KeySpec bool_key(std::string name, std::string def, std::string help) {
  return make_key(std::move(name), KeyKind::Bool, std::move(def), std::move(help));
}

KeySpec string_key(std::string name, std::string def, std::string help) {
  return make_key(std::move(name), KeyKind::String, std::move(def), std::move(help));
}

KeySpec choice_key(std::string name, std::string def, std::vector<std::string> choices, std::string help) {
  KeySpec k = make_key(std::move(name), KeyKind::Choice, std::move(def), std::move(help));
  k.choices = std::move(choices);
  return k;
}

KeySpec map_key(std::string name, std::string help) {
  return make_key(std::move(name), KeyKind::Map, "", std::move(help));
}

KeySpec list_key(std::string name, std::string help) {
  return make_key(std::move(name), KeyKind::List, "", std::move(help));
}

KeySpec int_list_key(std::string name, std::string def, std::string help, double min, double max) {
  KeySpec k = make_key(std::move(name), KeyKind::IntList, std::move(def), std::move(help));
  k.min = min, k.max = max;
  return k;
}

std::vector<std::string> key_names(const std::vector<KeySpec>& keys) {
  std::vector<std::string> out;
  for (const auto& k : keys) out.push_back(k.name);
  return out;
}

void check_section(YAML::Node node, const std::vector<KeySpec>& keys, const std::string& where,
                   const std::string& what, const std::vector<std::string>& extra) {
  if (!node.IsMap())
    throw RecipeError(fmt::format("{}: expected a mapping of keys ({}), found {}",
                                  where.empty() ? "recipe" : where, join_names(key_names(keys)),
                                  node_text(node)));
  std::vector<std::string> allowed = extra;
  for (const auto& k : keys) allowed.push_back(k.name);
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) throw RecipeError(fmt::format("{}: keys must be plain names", where));
    const std::string key = it->first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      throw RecipeError(fmt::format("unknown key '{}' for {} (allowed: {})", key_path(where, key), what,
                                    join_names(allowed)));
  }
  check_listed_keys(node, keys, where, what);
}

void check_listed_keys(YAML::Node node, const std::vector<KeySpec>& keys, const std::string& where,
                       const std::string& what) {
  for (const auto& k : keys) {
    const std::string path = key_path(where, k.name);
    YAML::Node v = node[k.name];
    if (!v || v.IsNull()) {
      if (k.required) throw RecipeError(fmt::format("{}: missing (required for {}: {})", path, what, k.help));
      if (!k.default_value.empty()) node[k.name] = YAML::Load(k.default_value);
      continue;
    }
    check_value(k, v, path);
  }
}

}  // namespace emu::config
