// Typed reads of a section that check_section (config/schema.h) has checked:
// model arguments, fault entries, the data section's common keys. Every
// accessor names the key path in its error; values were already checked, so
// an error here means the schema and the code that reads it disagree.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace emu::config {

class Args {
 public:
  Args(YAML::Node node, std::string where) : node_(std::move(node)), where_(std::move(where)) {}
  bool has(const std::string& key) const;
  int64_t integer(const std::string& key) const;
  double number(const std::string& key) const;
  bool flag(const std::string& key) const;
  std::string string(const std::string& key) const;
  std::vector<int64_t> integers(const std::string& key) const;
  const YAML::Node& node() const { return node_; }
  const std::string& where() const { return where_; }

 private:
  YAML::Node get(const std::string& key) const;
  YAML::Node node_;
  std::string where_;
};

}  // namespace emu::config
