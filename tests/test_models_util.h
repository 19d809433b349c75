// Helpers of the model tests (tests/test_models_*.cpp): building a model from a
// recipe-like YAML section, checking that a backward pass reached every
// parameter, and reading a run's per-epoch metrics.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "models/registry.h"

namespace emu::test {

// The model of a `model:` section given as YAML text, for a dataset of sizes `meta`,
// initialised from `seed`.
inline std::shared_ptr<models::Model> model_from_yaml(const std::string& yaml, const models::DataMeta& meta,
                                                      uint64_t seed = 1) {
  std::shared_ptr<models::Model> m = models::make_model(YAML::Load(yaml), meta);
  m->initialize(seed);
  return m;
}

struct GradReport {
  std::vector<std::string> missing, nonfinite, all_zero;
};

// Which parameters got no gradient, a non-finite one, or one that is zero everywhere.
inline GradReport grad_report(const models::Model& m) {
  GradReport r;
  for (const auto& [name, p] : m.named_parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) {
      r.missing.push_back(name);
      continue;
    }
    bool finite = true, nonzero = false;
    for (float v : g.to_vector()) {
      finite = finite && std::isfinite(v);
      nonzero = nonzero || v != 0.0f;
    }
    if (!finite) r.nonfinite.push_back(name);
    if (!nonzero) r.all_zero.push_back(name);
  }
  return r;
}

inline std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}

// Every parameter's values, by name (to compare before/after training).
inline std::map<std::string, std::vector<float>> parameter_values(const models::Model& m) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, p] : m.named_parameters()) out[name] = p.to_vector();
  return out;
}

// The rows of <run_dir>/metrics.jsonl as parsed YAML (JSON is YAML): row["train_loss"], row["test_acc"], ...
inline std::vector<YAML::Node> metrics_rows(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::vector<YAML::Node> rows;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(YAML::Load(line));
  return rows;
}

}  // namespace emu::test
