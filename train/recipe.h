// Recipes: the YAML file that describes one training run (docs/recipes.md).
//
//   Recipe r = load_recipe("recipes/lenet5_mnist.yaml", {"optimizer.lr=0.05"});
//   r.root["optimizer"]["lr"]   // "0.05", checked; every default filled in
//
// Loading parses the file, applies the `--set a.b=c` assignments in order, then
// checks every section against its schema (config/schema.h): unknown sections,
// keys and types are one-line errors naming the key path and the allowed names.
// The resolved tree (after --set and defaults) is what a run records as
// recipe.yaml and in its checkpoints.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config/schema.h"
#include "core/numerics_policy.h"

namespace emu::train {

struct Recipe {
  YAML::Node root;     // the resolved recipe
  std::string source;  // where it came from (a file path, or "<string>"), for messages

  std::string name() const { return root["name"].Scalar(); }
  YAML::Node section(const std::string& key) const { return root[key]; }
  // The resolved recipe as YAML text.
  std::string to_yaml() const;
};

// Reads `path`, applies `sets` ("a.b=c"), checks and resolves. Errors are
// RecipeError "recipe <path>: <key path>: <problem>".
Recipe load_recipe(const std::string& path, const std::vector<std::string>& sets = {});
// The same from YAML text; `default_name` fills `name` when the recipe has none.
Recipe parse_recipe(const std::string& text, const std::string& source,
                    const std::vector<std::string>& sets = {}, const std::string& default_name = "run");

// Applies one "a.b.c=value" to `root`: the value is parsed as YAML (a scalar,
// [a, list] or {a: map}); missing maps along the path are created, list items
// are addressed by index (numerics.overrides.0.format=fp32). Whether the key is
// allowed is decided by the schema check that follows.
void apply_set(YAML::Node root, const std::string& assignment);

// The numerics policy of a checked `numerics` section.
NumericsPolicy numerics_policy(const YAML::Node& numerics);

// The top-level keys and each section's keys (for docs and `emutrain info`).
const std::vector<config::KeySpec>& top_level_keys();
std::vector<std::string> optimizer_types();
std::vector<std::string> schedule_types();
const std::vector<config::KeySpec>& optimizer_keys(const std::string& type);
const std::vector<config::KeySpec>& schedule_keys(const std::string& type);
const std::vector<config::KeySpec>& data_common_keys();
const std::vector<config::KeySpec>& logging_keys();
const std::vector<config::KeySpec>& checkpoint_keys();

// "${VAR}" and "${VAR:-default}" in `s` replaced from the environment (data.root).
std::string expand_env(const std::string& s);

}  // namespace emu::train
