// Typed reads of one YAML mapping of a recipe whose keys have no schema table:
// the data section's loader keys, which depend on the dataset type. Every error
// names the key's full path, the value and what was expected
// ("data.augment.hflip: expected true or false, got 'maybe'") and is a
// std::invalid_argument; check_keys rejects unknown keys with the list of
// allowed ones, so a typo never silently falls back to a default. Values parse
// with the strict scalar readers of config/scalar.h, as schema-checked keys do.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace emu::config {

class ConfigSection {
 public:
  // `node` may be undefined or null (an absent section: every key takes its default).
  ConfigSection(YAML::Node node, std::string path);

  const std::string& path() const { return path_; }
  std::string key_path(const std::string& key) const;
  bool has(const std::string& key) const;

  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_double(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  // A string that must be one of `allowed`.
  std::string get_choice(const std::string& key, const std::string& fallback,
                         const std::vector<std::string>& allowed) const;
  // A sequence of numbers; empty when the key is absent. Floats parse with
  // correct rounding to binary32.
  std::vector<float> get_float_list(const std::string& key) const;
  std::vector<int64_t> get_int_list(const std::string& key) const;
  // The nested mapping `key` (absent: an empty section).
  ConfigSection section(const std::string& key) const;

  // Throws "<path>.<key>: unknown key (allowed: a, b, ...)" for the first key
  // not in `allowed`, and "<path>: expected a mapping" when the node is not one.
  void check_keys(const std::vector<std::string>& allowed) const;

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;

 private:
  YAML::Node child(const std::string& key) const;
  std::string scalar(const std::string& key, const char* expected) const;
  template <typename T>
  T typed(const std::string& key, const char* what, std::optional<T> (*read)(const std::string&)) const;
  YAML::Node node_;
  std::string path_;
};

}  // namespace emu::config
