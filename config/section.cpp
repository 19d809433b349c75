#include "config/section.h"

#include <optional>
#include <stdexcept>

#include "config/names.h"
#include "config/scalar.h"

namespace emu::config {

ConfigSection::ConfigSection(YAML::Node node, std::string path)
    : node_(std::move(node)), path_(std::move(path)) {}

std::string ConfigSection::key_path(const std::string& key) const { return config::key_path(path_, key); }

YAML::Node ConfigSection::child(const std::string& key) const {
  if (!node_.IsDefined() || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& n = node_;  // const: a lookup must not insert the key
  return n[key];
}

bool ConfigSection::has(const std::string& key) const {
  YAML::Node c = child(key);
  return c.IsDefined() && !c.IsNull();
}

void ConfigSection::fail(const std::string& key, const std::string& problem) const {
  throw std::invalid_argument((key.empty() ? path_ : key_path(key)) + ": " + problem);
}

std::string ConfigSection::scalar(const std::string& key, const char* expected) const {
  YAML::Node c = child(key);
  if (!c.IsScalar())
    fail(key, std::string("expected ") + expected + ", got a " + (c.IsMap() ? "mapping" : "sequence"));
  return c.Scalar();
}

// The value of scalar `key` as `read` parses it; "expected <what>, got '<text>'" when it does not.
template <typename T>
T ConfigSection::typed(const std::string& key, const char* what,
                       std::optional<T> (*read)(const std::string&)) const {
  const std::string s = scalar(key, what);
  const std::optional<T> v = read(s);
  if (!v) fail(key, std::string("expected ") + what + ", got '" + s + "'");
  return *v;
}

int64_t ConfigSection::get_int(const std::string& key, int64_t fallback) const {
  return has(key) ? typed<int64_t>(key, "an integer", read_int) : fallback;
}

double ConfigSection::get_double(const std::string& key, double fallback) const {
  return has(key) ? typed<double>(key, "a number", read_number) : fallback;
}

bool ConfigSection::get_bool(const std::string& key, bool fallback) const {
  return has(key) ? typed<bool>(key, "true or false", read_bool) : fallback;
}

std::string ConfigSection::get_string(const std::string& key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  return scalar(key, "a string");
}

std::string ConfigSection::get_choice(const std::string& key, const std::string& fallback,
                                      const std::vector<std::string>& allowed) const {
  std::string s = get_string(key, fallback);
  for (const auto& a : allowed)
    if (s == a) return s;
  fail(key, "unknown value '" + s + "' (allowed: " + join_names(allowed) + ")");
}

std::vector<float> ConfigSection::get_float_list(const std::string& key) const {
  std::vector<float> out;
  if (!has(key)) return out;
  YAML::Node c = child(key);
  if (!c.IsSequence()) fail(key, "expected a list of numbers");
  for (const auto& e : c) {
    std::optional<float> v = e.IsScalar() ? read_float(e.Scalar()) : std::nullopt;
    if (!v)
      fail(key, "expected a list of numbers, got element '" + (e.IsScalar() ? e.Scalar() : std::string("?")) +
                    "'");
    out.push_back(*v);
  }
  return out;
}

std::vector<int64_t> ConfigSection::get_int_list(const std::string& key) const {
  std::vector<int64_t> out;
  if (!has(key)) return out;
  YAML::Node c = child(key);
  if (!c.IsSequence()) fail(key, "expected a list of integers");
  for (const auto& e : c) {
    std::optional<int64_t> v = e.IsScalar() ? read_int(e.Scalar()) : std::nullopt;
    if (!v)
      fail(key, "expected a list of integers, got element '" +
                    (e.IsScalar() ? e.Scalar() : std::string("?")) + "'");
    out.push_back(*v);
  }
  return out;
}

ConfigSection ConfigSection::section(const std::string& key) const {
  YAML::Node c = child(key);
  if (c.IsDefined() && !c.IsNull() && !c.IsMap()) fail(key, "expected a mapping of keys");
  return ConfigSection(c, key_path(key));
}

void ConfigSection::check_keys(const std::vector<std::string>& allowed) const {
  if (!node_.IsDefined() || node_.IsNull()) return;
  if (!node_.IsMap()) fail("", "expected a mapping of keys");
  for (const auto& kv : node_) {
    std::string key = kv.first.Scalar();
    bool known = false;
    for (const auto& a : allowed) known = known || key == a;
    if (!known) fail(key, "unknown key (allowed: " + join_names(allowed) + ")");
  }
}

}  // namespace emu::config
