#include "train/recipe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "data/registry.h"
#include "models/registry.h"
#include "numerics/approx_mul.h"
#include "numerics/format_spec.h"
#include "train/data_parallel.h"
#include "train/faults.h"

namespace emu::train {

using config::bool_key;
using config::check_listed_keys;
using config::check_section;
using config::choice_key;
using config::int_key;
using config::join_names;
using config::KeySpec;
using config::list_key;
using config::map_key;
using config::number_key;
using config::parse_int;
using config::RecipeError;
using config::string_key;

namespace {

// --- schemas -------------------------------------------------------------

const std::vector<KeySpec>& sgd_keys() {
  static const std::vector<KeySpec> k = {
      number_key("lr", "0.01", "learning rate (the schedule's peak)"),
      number_key("momentum", "0", "momentum factor", 0, 1),
      number_key("dampening", "0", "dampening of the momentum", 0, 1),
      number_key("weight_decay", "0", "L2 penalty added to the gradient"),
      bool_key("nesterov", "false", "Nesterov momentum"),
      string_key("update_format", "fp32", "format every element-wise step of the update is rounded to"),
      number_key("clip_grad_norm", "0", "clip the global gradient L2 norm to this (0 = off)"),
  };
  return k;
}

std::vector<KeySpec> adam_keys_with(const char* weight_decay) {
  return {
      number_key("lr", "0.001", "learning rate (the schedule's peak)"),
      number_key("beta1", "0.9", "first-moment decay", 0, 1),
      number_key("beta2", "0.999", "second-moment decay", 0, 1),
      number_key("eps", "1e-8", "denominator epsilon"),
      number_key("weight_decay", weight_decay, "L2 penalty (adam) or decoupled decay (adamw)"),
      string_key("update_format", "fp32", "format every element-wise step of the update is rounded to"),
      number_key("clip_grad_norm", "0", "clip the global gradient L2 norm to this (0 = off)"),
  };
}

const std::vector<KeySpec>& empty_keys() {
  static const std::vector<KeySpec> k;
  return k;
}

const std::vector<KeySpec>& numerics_keys() {
  static const std::vector<KeySpec> k = {
      map_key("default", "policy keys for every module (docs/engine.md)"),
      list_key("overrides", "list of {match: glob, <policy keys>}, applied in order"),
      map_key("approx_multipliers",
              "{name: path/to/lib.so}: approximate-multiplier plugins for mul: lut:<name>:<format> "
              "(docs/approx_mul.md)"),
  };
  return k;
}

std::string file_stem(const std::string& path) {
  std::string base =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  size_t dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

// Flattens a policy mapping into (key, value) pairs: nested maps give dotted
// keys (functions: {exp: exact} -> functions.exp).
void flatten_policy(const YAML::Node& node, const std::string& prefix, const std::string& where,
                    std::vector<std::pair<std::string, std::string>>& out) {
  if (!node.IsMap()) throw RecipeError(fmt::format("{}: expected a mapping of policy keys", where));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = prefix + it->first.Scalar();
    if (key == "match" && prefix.empty()) continue;
    if (it->second.IsMap())
      flatten_policy(it->second, key + ".", where, out);
    else if (it->second.IsScalar())
      out.emplace_back(key, it->second.Scalar());
    else if (it->second.IsSequence() && key.rfind("functions.", 0) == 0) {
      // A list of breakpoints: functions: {tanh: [-3, -1, 0, 1, 3]} is "pwl:-3,-1,0,1,3" (numerics/pwl.h).
      std::string value = "pwl:";
      for (size_t i = 0; i < it->second.size(); ++i)
        value += (i ? "," : "") + (it->second[i].IsScalar() ? it->second[i].Scalar() : std::string("?"));
      out.emplace_back(key, value);
    } else
      throw RecipeError(fmt::format("{}.{}: expected a value such as e5m2", where, key));
  }
}

void check_format(const YAML::Node& section, const std::string& key, const std::string& where) {
  const std::string value = section[key].Scalar();
  try {
    require_storage(parse_format(value), key);
  } catch (const FormatError& e) {
    throw RecipeError(fmt::format("{}.{}: '{}' is not usable: {}", where, key, value, e.what()));
  }
}

// Checks a section that names its type among `types` with keys `keys_of(type)`.
void check_typed(YAML::Node root, const std::string& name, const std::vector<std::string>& types,
                 const std::vector<KeySpec>& (*keys_of)(const std::string&),
                 const std::string& default_type) {
  YAML::Node s = root[name];
  if (!s || s.IsNull()) {
    if (default_type.empty())
      throw RecipeError(fmt::format("{}: missing (types: {})", name, join_names(types)));
    root[name] = YAML::Node(YAML::NodeType::Map);
    root[name]["type"] = default_type;
    s = root[name];
  }
  if (!s.IsMap())
    throw RecipeError(
        fmt::format("{}: expected a mapping with a 'type' key (types: {})", name, join_names(types)));
  YAML::Node t = s["type"];
  if (!t || !t.IsScalar())
    throw RecipeError(fmt::format("{}.type: missing (allowed: {})", name, join_names(types)));
  if (std::find(types.begin(), types.end(), t.Scalar()) == types.end())
    throw RecipeError(
        fmt::format("{}.type: unknown type '{}' (allowed: {})", name, t.Scalar(), join_names(types)));
  check_section(s, keys_of(t.Scalar()), name, name + " type " + t.Scalar());
}

void check_data(YAML::Node root) {
  YAML::Node s = root["data"];
  const std::vector<std::string> types = data::dataset_types();
  if (!s || !s.IsMap())
    throw RecipeError(fmt::format("data: missing or not a mapping (types: {})", join_names(types)));
  YAML::Node t = s["type"];
  if (!t || !t.IsScalar())
    throw RecipeError(fmt::format("data.type: missing (allowed: {})", join_names(types)));
  if (std::find(types.begin(), types.end(), t.Scalar()) == types.end())
    throw RecipeError(
        fmt::format("data.type: unknown dataset type '{}' (allowed: {})", t.Scalar(), join_names(types)));
  // Unknown keys now, before any file is read; the values of the dataset's own
  // keys are checked by its loader (data/registry.h), those the trainer reads here.
  const std::vector<std::string> allowed = data::dataset_keys(t.Scalar());
  for (auto it = s.begin(); it != s.end(); ++it)
    if (std::find(allowed.begin(), allowed.end(), it->first.Scalar()) == allowed.end())
      throw RecipeError(fmt::format("unknown key 'data.{}' for data type {} (allowed: {})",
                                    it->first.Scalar(), t.Scalar(), join_names(allowed)));
  check_listed_keys(s, data_common_keys(), "data", "data type " + t.Scalar());
  if (!s["eval_batch_size"] || s["eval_batch_size"].IsNull()) s["eval_batch_size"] = s["batch_size"].Scalar();
  if (s["root"] && s["root"].IsScalar() && s["root"].Scalar().find("${") != std::string::npos)
    s["root"] = expand_env(s["root"].Scalar());
}

void check_numerics(YAML::Node root) {
  YAML::Node s = root["numerics"];
  if (!s || s.IsNull()) {
    root["numerics"] = YAML::Node(YAML::NodeType::Map);
    root["numerics"]["default"] = YAML::Node(YAML::NodeType::Map);
    root["numerics"]["default"]["format"] = "fp32";
    return;
  }
  check_section(s, numerics_keys(), "numerics", "numerics", {});
  if (s["overrides"]) {
    for (size_t i = 0; i < s["overrides"].size(); ++i) {
      YAML::Node o = s["overrides"][i];
      std::string where = fmt::format("numerics.overrides[{}]", i);
      if (!o.IsMap() || !o["match"] || !o["match"].IsScalar())
        throw RecipeError(fmt::format("{}: expected a mapping with 'match: <glob>' and policy keys", where));
    }
  }
  numerics_policy(s);  // every key and value, with its path in the message
}

}  // namespace

const std::vector<KeySpec>& top_level_keys() {
  static const std::vector<KeySpec> k = [] {
    std::vector<KeySpec> v = {
        string_key("name", "",
                   "run name (default: the recipe file's name); runs/<name>-<time> is the run dir"),
        map_key("model", "model.type and its arguments (models/registry.h)"),
        map_key("data", "data.type, root and loader keys (docs/data.md)"),
        map_key("optimizer", "optimizer.type (sgd, adam, adamw) and its arguments"),
        map_key("schedule", "learning-rate schedule: none, step, cosine, warmup_cosine"),
        int_key("epochs", "", "number of passes over the training set (or give steps)", 1),
        int_key("steps", "", "number of optimizer steps (or give epochs)", 1),
        int_key("seed", "0", "seed of every random draw (init, data order, augmentation, dropout, SR)"),
        choice_key(
            "device", "cpu", {"cpu", "cuda", "cuda-host"},
            "where the run computes: cpu, cuda (a GPU), cuda-host (the CUDA kernels run on the CPU by the "
            "host executor; docs/devices.md)"),
        int_key("threads", "0", "CPU worker threads (0 = all hardware threads)"),
        map_key("numerics", "default policy and per-module overrides"),
        map_key("logging", "progress display and log lines"),
        map_key("checkpoint", "checkpoint frequency and retention"),
        list_key(
            "faults",
            "fault injection: list of {site, module, bits, step|steps|probability, kind} (docs/faults.md)"),
        map_key("parallel", "data-parallel settings: equivalent_ranks, timeout_s (docs/parallel.md)"),
    };
    return v;
  }();
  return k;
}

std::vector<std::string> optimizer_types() { return {"sgd", "adam", "adamw"}; }
std::vector<std::string> schedule_types() { return {"none", "step", "cosine", "warmup_cosine"}; }

const std::vector<KeySpec>& optimizer_keys(const std::string& type) {
  static const std::vector<KeySpec> adam = adam_keys_with("0"), adamw = adam_keys_with("0.01");
  if (type == "adam") return adam;
  if (type == "adamw") return adamw;
  return sgd_keys();
}

const std::vector<KeySpec>& schedule_keys(const std::string& type) {
  static const std::vector<KeySpec> step = {
      int_key("step_size", "0", "multiply the lr by gamma every step_size optimizer steps"),
      int_key("step_epochs", "0", "... or every step_epochs epochs (give one of the two)"),
      number_key("gamma", "0.1", "the factor"),
  };
  static const std::vector<KeySpec> cosine = {
      number_key("min_lr", "0", "the lr at the last step"),
  };
  static const std::vector<KeySpec> warmup_cosine = {
      int_key("warmup_steps", "0", "linear warm-up over this many steps"),
      int_key("warmup_epochs", "0", "... or this many epochs (give one of the two)"),
      number_key("min_lr", "0", "the lr at the last step"),
  };
  if (type == "step") return step;
  if (type == "cosine") return cosine;
  if (type == "warmup_cosine") return warmup_cosine;
  return empty_keys();
}

const std::vector<KeySpec>& data_common_keys() {
  static const std::vector<KeySpec> k = {
      int_key("batch_size", "32", "training examples per step", 1),
      int_key("eval_batch_size", "", "examples per evaluation batch (default: batch_size)", 1),
      bool_key("shuffle", "true", "shuffle the training set every epoch (keyed by seed and epoch)"),
      int_key("workers", "1",
              "loader threads preparing batches ahead of the model (0 = in the training thread)"),
      bool_key("drop_last", "false", "drop the last training batch of an epoch when it is short"),
  };
  return k;
}

const std::vector<KeySpec>& logging_keys() {
  static const std::vector<KeySpec> k = {
      int_key("every_steps", "50", "a log line every this many steps (0 = one per epoch)"),
      choice_key("progress", "auto", {"auto", "on", "off", "true", "false"},
                 "progress bar (auto: when stderr is a terminal and CI is unset)"),
  };
  return k;
}

const std::vector<KeySpec>& checkpoint_keys() {
  static const std::vector<KeySpec> k = {
      int_key("every_steps", "0", "write a checkpoint every this many steps (0 = off)"),
      int_key("every_epochs", "1", "write a checkpoint at the end of every this many epochs (0 = off)"),
      int_key("keep", "3", "keep this many most recent periodic checkpoints (0 = all)"),
  };
  return k;
}

std::string expand_env(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 2, "${") == 0) {
      size_t end = s.find('}', i + 2);
      if (end == std::string::npos) throw RecipeError(fmt::format("data.root: unclosed '${{' in '{}'", s));
      std::string body = s.substr(i + 2, end - i - 2), fallback;
      size_t dash = body.find(":-");
      bool has_fallback = dash != std::string::npos;
      if (has_fallback) {
        fallback = body.substr(dash + 2);
        body = body.substr(0, dash);
      }
      const char* v = std::getenv(body.c_str());
      if (v && *v)
        out += v;
      else if (has_fallback)
        out += fallback;
      else
        throw RecipeError(
            fmt::format("data.root: environment variable {} is not set (in '{}'; use ${{{}:-default}} "
                        "or --set data.root=...)",
                        body, s, body));
      i = end + 1;
    } else {
      out += s[i++];
    }
  }
  return out;
}

namespace {

// "a.b.c" -> {a, b, c}; empty components are errors.
std::vector<std::string> key_parts(const std::string& assignment, const std::string& key) {
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw RecipeError(fmt::format("--set '{}': empty component in key '{}'", assignment, key));
    parts.push_back(p);
  }
  if (!key.empty() && key.back() == '.')
    throw RecipeError(fmt::format("--set '{}': empty component in key '{}'", assignment, key));
  return parts;
}

// `--set KEY=null`: deletes KEY's mapping entry. Nothing is created on the way,
// so a key that is not there is an error naming it (a typo would otherwise
// silently remove nothing and the run would differ from what was asked).
void remove_key(YAML::Node root, const std::string& assignment, const std::vector<std::string>& parts) {
  std::vector<YAML::Node> chain = {root};
  std::string path;
  for (size_t i = 0; i < parts.size(); ++i) {
    YAML::Node cur = chain.back();
    const std::string parent = path;
    path += (path.empty() ? "" : ".") + parts[i];
    if (!cur.IsMap())
      throw RecipeError(
          fmt::format("--set '{}': '{}' is not a section of mapped keys, so '{}' cannot be removed "
                      "from it (set the whole {} instead)",
                      assignment, parent, parts[i], cur.IsSequence() ? "list" : "value"));
    if (!cur[parts[i]])
      throw RecipeError(
          fmt::format("--set '{}': there is no key '{}' in the recipe to remove", assignment, path));
    if (i + 1 == parts.size()) {
      cur.remove(parts[i]);
      return;
    }
    chain.push_back(cur[parts[i]]);
  }
}

}  // namespace

void apply_set(YAML::Node root, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw RecipeError(fmt::format("--set '{}': expected KEY=VALUE such as optimizer.lr=0.1", assignment));
  const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  const std::vector<std::string> parts = key_parts(assignment, key);
  // YAML's null spellings delete the key; a null value has no meaning in any
  // section, so nothing that worked before changes.
  if (text == "null" || text == "~" || text == "Null" || text == "NULL")
    return remove_key(root, assignment, parts);
  YAML::Node value;
  try {
    value = text.empty() ? YAML::Node(std::string()) : YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw RecipeError(fmt::format("--set '{}': value is not valid YAML: {}", assignment, e.msg));
  }
  // Walk with fresh handles: yaml-cpp node assignment rebinds references.
  std::vector<YAML::Node> chain = {root};
  std::string path;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node cur = chain.back();
    path += (path.empty() ? "" : ".") + parts[i];
    if (cur.IsSequence()) {
      int64_t idx = -1;
      try {
        idx = parse_int(parts[i], path);
      } catch (const RecipeError&) {
      }
      if (idx < 0 || static_cast<size_t>(idx) >= cur.size())
        throw RecipeError(
            fmt::format("--set '{}': '{}' is a list of {} items; '{}' is not an index into it", assignment,
                        path.substr(0, path.rfind('.') == std::string::npos ? 0 : path.rfind('.')),
                        cur.size(), parts[i]));
      chain.push_back(cur[static_cast<size_t>(idx)]);
      continue;
    }
    if (cur.IsScalar())
      throw RecipeError(
          fmt::format("--set '{}': '{}' is a value, not a section", assignment,
                      path.substr(0, path.rfind('.') == std::string::npos ? 0 : path.rfind('.'))));
    if (!cur[parts[i]] || cur[parts[i]].IsNull()) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
    chain.push_back(cur[parts[i]]);
  }
  YAML::Node last = chain.back();
  if (last.IsSequence()) {
    int64_t idx = -1;
    try {
      idx = parse_int(parts.back(), key);
    } catch (const RecipeError&) {
    }
    if (idx < 0 || static_cast<size_t>(idx) > last.size())
      throw RecipeError(fmt::format("--set '{}': '{}' is not an index into a list of {} items", assignment,
                                    parts.back(), last.size()));
    if (static_cast<size_t>(idx) == last.size())
      last.push_back(value);
    else
      last[static_cast<size_t>(idx)] = value;
    return;
  }
  if (last.IsScalar())
    throw RecipeError(
        fmt::format("--set '{}': '{}' is a value, not a section", assignment, key.substr(0, key.rfind('.'))));
  last[parts.back()] = value;
}

NumericsPolicy numerics_policy(const YAML::Node& numerics) {
  NumericsPolicy p;
  auto rethrow = [](const std::exception& e) -> RecipeError { return RecipeError(e.what()); };
  try {
    // Plugins first: the policy keys below may name them (mul: lut:<name>:<format>).
    if (YAML::Node plugins = numerics["approx_multipliers"]; plugins && !plugins.IsNull()) {
      if (!plugins.IsMap())
        throw RecipeError("numerics.approx_multipliers: expected a mapping {name: path/to/lib.so}");
      for (auto it = plugins.begin(); it != plugins.end(); ++it) {
        const std::string name = it->first.Scalar();
        if (!it->second.IsScalar())
          throw RecipeError(fmt::format("numerics.approx_multipliers.{}: expected a library path", name));
        try {
          load_approx_mul_plugin(name, expand_env(it->second.Scalar()));
        } catch (const ApproxMulError& e) {
          throw RecipeError(fmt::format("numerics.approx_multipliers.{}: {}", name, e.what()));
        }
      }
    }
    if (numerics["default"]) {
      std::vector<std::pair<std::string, std::string>> kv;
      flatten_policy(numerics["default"], "", "numerics.default", kv);
      for (const auto& [k, v] : kv) p.set(k, v, "numerics.default");
    }
    if (numerics["overrides"]) {
      for (size_t i = 0; i < numerics["overrides"].size(); ++i) {
        YAML::Node o = numerics["overrides"][i];
        const std::string where = fmt::format("numerics.overrides[{}]", i);
        std::vector<std::pair<std::string, std::string>> kv;
        flatten_policy(o, "", where, kv);
        if (kv.empty()) throw RecipeError(fmt::format("{}: no policy keys besides 'match'", where));
        for (const auto& [k, v] : kv) p.set_override(o["match"].Scalar(), k, v);
      }
    }
  } catch (const RecipeError&) {
    throw;
  } catch (const std::exception& e) {
    throw rethrow(e);
  }
  return p;
}

std::string Recipe::to_yaml() const {
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

Recipe parse_recipe(const std::string& text, const std::string& source, const std::vector<std::string>& sets,
                    const std::string& default_name) {
  Recipe r;
  r.source = source;
  try {
    try {
      r.root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      throw RecipeError(fmt::format("YAML syntax error at line {}, column {}: {}", e.mark.line + 1,
                                    e.mark.column + 1, e.msg));
    }
    if (r.root.IsNull()) r.root = YAML::Node(YAML::NodeType::Map);
    for (const std::string& s : sets) apply_set(r.root, s);
    // epochs and steps are alternatives: one given by --set replaces the other from the file.
    auto set_by_cli = [&](const std::string& key) {
      return std::any_of(sets.begin(), sets.end(),
                         [&](const std::string& s) { return s.rfind(key + "=", 0) == 0; });
    };
    if (r.root.IsMap() && set_by_cli("steps") != set_by_cli("epochs"))
      r.root.remove(set_by_cli("steps") ? "epochs" : "steps");
    YAML::Node root = r.root;
    check_section(root, top_level_keys(), "", "a recipe", {});
    if (!root["name"] || root["name"].IsNull() || root["name"].Scalar().empty()) root["name"] = default_name;
    const bool epochs = root["epochs"] && !root["epochs"].IsNull(),
               steps = root["steps"] && !root["steps"].IsNull();
    if (epochs == steps)
      throw RecipeError(epochs
                            ? "epochs and steps: give one of the two, not both"
                            : "epochs: missing (give epochs, or steps for a run counted in optimizer steps)");
    if (!root["model"])
      throw RecipeError(fmt::format("model: missing (types: {})", join_names(models::model_types())));
    models::check_model_section(root["model"]);
    check_data(root);
    check_typed(root, "optimizer", optimizer_types(), optimizer_keys, "");
    check_format(root["optimizer"], "update_format", "optimizer");
    check_typed(root, "schedule", schedule_types(), schedule_keys, "none");
    YAML::Node sch = root["schedule"];
    const std::string st = sch["type"].Scalar();
    if (st == "step" &&
        (parse_int(sch["step_size"].Scalar(), "") > 0) == (parse_int(sch["step_epochs"].Scalar(), "") > 0))
      throw RecipeError("schedule: type step needs one of step_size (steps) or step_epochs, > 0");
    if (st == "warmup_cosine" && parse_int(sch["warmup_steps"].Scalar(), "") > 0 &&
        parse_int(sch["warmup_epochs"].Scalar(), "") > 0)
      throw RecipeError("schedule: give warmup_steps or warmup_epochs, not both");
    for (const char* name : {"logging", "checkpoint"}) {
      if (!root[name] || root[name].IsNull()) root[name] = YAML::Node(YAML::NodeType::Map);
      check_section(root[name], std::string(name) == "logging" ? logging_keys() : checkpoint_keys(), name,
                    name, {});
    }
    if (root["parallel"] && !root["parallel"].IsNull())  // optional: absent stays absent
      check_section(root["parallel"], parallel_keys(), "parallel", "parallel", {});
    check_numerics(root);
    if (root["faults"] && !root["faults"].IsNull())
      check_faults_section(root["faults"]);  // absent stays absent
  } catch (const RecipeError& e) {
    throw RecipeError(fmt::format("recipe {}: {}", source, e.what()));
  }
  return r;
}

Recipe load_recipe(const std::string& path, const std::vector<std::string>& sets) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RecipeError(fmt::format("recipe {}: cannot open the file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_recipe(ss.str(), path, sets, file_stem(path));
}

}  // namespace emu::train
