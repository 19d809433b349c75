// Sweep files (docs/studies.md): a base recipe, axes over recipe keys and
// template variables, repeats with seeds; expanded into the list of runs that
// `emutrain sweep` trains, each as `emutrain train BASE --set ...`.
//
//   SweepSpec s = load_sweep("recipes/sweeps/gcn_cora_formats.yaml");
//   std::vector<SweepPoint> points = expand_sweep(s);   // the axis product, first axis slowest
//   std::vector<SweepRun> runs = sweep_runs(s, points);  // points x seeds
//
// Parsing checks every key and names the bad one by its path in the file
// ("sweep s.yaml: axes[1].valuez: unknown key (allowed: name, key, values)").
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "numerics/printable.h"

namespace emu::train {

// A sweep file that cannot be used; what() is one line naming the file and key path.
class SweepError : public OneLineError {
 public:
  using OneLineError::OneLineError;
};

// Ordered (name, template) pairs: recipe key -> value, or variable -> value.
using TemplateList = std::vector<std::pair<std::string, std::string>>;

// One value of an axis: its text (the results.csv cell and the point id part)
// plus the settings and variables it brings along when chosen.
struct AxisValue {
  std::string value;
  TemplateList set;   // recipe key -> template, applied only when this value is chosen
  TemplateList vars;  // variable -> template, defined only when this value is chosen
};

struct SweepAxis {
  std::string name;  // the results.csv column and template variable {name}
  std::string key;   // the recipe key the value is assigned to ("": a variable only)
  std::vector<AxisValue> values;
  int group = 0;  // axes of one `zip` share a group and advance together
};

struct SweepSpec {
  std::string source;  // the sweep file (for messages)
  std::string name;    // default: the sweep file's name without .yaml
  std::string recipe;  // the base recipe, resolved against the sweep file's folder
  std::vector<SweepAxis> axes;
  TemplateList vars;               // variables from templates, in file order (each sees the earlier ones)
  TemplateList set;                // recipe key -> template, for every point (after the axes' own sets)
  std::string label;               // progress label template ("" = "name=value ..." of every axis)
  std::vector<uint64_t> seeds{0};  // `repeats: R` = seeds 0..R-1, or an explicit `seeds:` list
  int jobs = 1;                    // runs at once
  int threads = 1;                 // `threads` of every run (0: all hardware threads)
};

// One point of the product: a value of every axis, and the --set list it gives.
struct SweepPoint {
  std::string id;                   // "exp=5_man=3_mode=acc_fp32": unique, safe as a folder name
  std::string label;                // the expanded label template
  std::vector<std::string> values;  // one per axis, in spec.axes order
  std::vector<std::string> sets;    // "key=value", in the order applied (see expand_sweep)
};

// One training run: a point with a seed.
struct SweepRun {
  size_t point = 0;  // index into the points
  uint64_t seed = 0;
  std::string id;                 // "<point id>_seed=<seed>": the run's folder under <out>/runs
  std::string label;              // "<point label> seed <seed>"
  std::vector<std::string> sets;  // "threads=T", the point's sets, then "seed=S"
};

// Parses a sweep file; `text` is its content, `path` locates the base recipe.
SweepSpec parse_sweep(const std::string& text, const std::string& path);
SweepSpec load_sweep(const std::string& path);

// Every point, the first axis varying slowest (as nested loops in file order;
// a zip group counts as one axis). A point's sets are, in order: each axis's
// `key: value`, each chosen value's own `set`, then the sweep's `set`; all
// templates expanded with the axis values and variables (value vars first,
// then the sweep's vars in file order).
std::vector<SweepPoint> expand_sweep(const SweepSpec& spec);
// points x seeds, seeds varying fastest.
std::vector<SweepRun> sweep_runs(const SweepSpec& spec, const std::vector<SweepPoint>& points);

// Replaces every {name} in `text` by its value from `vars` (later entries win);
// "{{" and "}}" are literal braces; a brace not followed by a name and "}" is
// kept as it is (so YAML flow text such as {match: fc1} passes through).
// Throws SweepError("unknown variable 'x' in ...") for a {name} not in vars.
std::string expand_template(const std::string& text, const TemplateList& vars);

// "3..8" -> {3, 4, 5, 6, 7, 8} (inclusive; descending when the first is larger);
// false when `text` is not a range.
bool parse_int_range(const std::string& text, std::vector<int64_t>* out);

}  // namespace emu::train
