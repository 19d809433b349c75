// Key schemas for recipe sections and model arguments: every key a section may
// hold, its kind, default and help, so that one checker can reject unknown keys
// and bad values with the key's path and the allowed names, fill in defaults
// (the resolved recipe shows every value a run used), and docs can list them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace emu::train {

// A recipe (or model argument) that cannot be used; what() is one line that
// names the key path, the value and what is allowed.
class RecipeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class KeyKind {
  Int,      // an integer in [min, max]
  Number,   // a real number in [min, max]
  Bool,     // true/false (also on/off, yes/no as YAML 1.1 spells them)
  String,   // any scalar text
  Choice,   // one of `choices`
  IntList,  // a sequence of integers in [min, max]
  Map,      // a mapping, checked by its owner
  List,     // a sequence, checked by its owner
};

struct KeySpec {
  std::string name;
  KeyKind kind = KeyKind::String;
  std::string default_value;  // YAML scalar text filled in when absent; "" = no default
  std::string help;
  std::vector<std::string> choices;  // Choice
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool required = false;
};

// Shorthands for schema tables.
KeySpec int_key(std::string name, std::string def, std::string help, double min = 0,
                double max = std::numeric_limits<double>::infinity());
KeySpec number_key(std::string name, std::string def, std::string help, double min = 0,
                   double max = std::numeric_limits<double>::infinity());
KeySpec bool_key(std::string name, std::string def, std::string help);
KeySpec string_key(std::string name, std::string def, std::string help);
KeySpec choice_key(std::string name, std::string def, std::vector<std::string> choices, std::string help);
KeySpec map_key(std::string name, std::string help);
KeySpec list_key(std::string name, std::string help);
KeySpec int_list_key(std::string name, std::string def, std::string help, double min = 0,
                     double max = std::numeric_limits<double>::infinity());

// Checks the mapping `node` (the section at `where`, e.g. "optimizer") against
// `keys`: every key must be listed (else "unknown key 'optimizer.lr_rate' for
// optimizer type sgd (allowed: type, lr, ...)"), values must have their kind and
// range, required keys must be present. Absent keys with a default get it.
// `what` names the schema in messages ("optimizer type sgd"). Keys in `extra`
// are allowed without a check (e.g. "type").
void check_section(YAML::Node node, const std::vector<KeySpec>& keys, const std::string& where,
                   const std::string& what, const std::vector<std::string>& extra = {"type"});

// The same for the keys listed only: other keys are left to another checker
// (the data section's loader keys).
void check_listed_keys(YAML::Node node, const std::vector<KeySpec>& keys, const std::string& where,
                       const std::string& what);

// "a, b, c"
std::string join_names(const std::vector<std::string>& names);
std::vector<std::string> key_names(const std::vector<KeySpec>& keys);

// Typed reads of a checked section. Every accessor names the key path in its
// error; values were already checked, so errors here mean a schema/code mismatch.
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

// Scalar parsing shared by the checker and Args: strict (the whole text must
// be the number), with the key path in the error.
int64_t parse_int(const std::string& text, const std::string& path);
double parse_number(const std::string& text, const std::string& path);
bool parse_bool(const std::string& text, const std::string& path);

}  // namespace emu::train
