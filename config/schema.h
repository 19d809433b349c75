// Key schemas for recipe sections and model arguments: every key a section may
// hold, its kind, default and help, so that one checker can reject unknown keys
// and bad values with the key's path and the allowed names, fill in defaults
// (the resolved recipe shows every value a run used), and docs can list them.
// Errors are RecipeError (config/recipe_error.h); values are read back with
// Args (config/args.h).
#pragma once

#include <yaml-cpp/yaml.h>

#include <limits>
#include <string>
#include <vector>

#include "config/names.h"
#include "config/recipe_error.h"
#include "config/scalar.h"

namespace emu::config {

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

std::vector<std::string> key_names(const std::vector<KeySpec>& keys);

}  // namespace emu::config
