#include "train/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace emu::train {
namespace fs = std::filesystem;
namespace {

// Columns of results.csv/aggregate.csv that an axis may not take as its name.
const std::set<std::string>& reserved_names() {
  static const std::set<std::string> r = {
      "point",         "seed",           "status",       "diverged",      "final_train_loss",
      "final_val_acc", "final_test_acc", "best_val_acc", "best_test_acc", "wall_s",
      "steps",         "run_dir",        "runs",         "reason"};
  return r;
}

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    throw SweepError(fmt::format("sweep {}: {}{}{}", source_, path, path.empty() ? "" : ": ", problem));
  }

  // Fails unless every key of `node` (a map) is in `allowed`.
  void check_keys(const YAML::Node& node, const std::string& path, const std::vector<std::string>& allowed) {
    if (!node.IsMap()) fail(path, "want a mapping");
    for (const auto& kv : node) {
      const std::string k = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        std::string list;
        for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(join(path, k), fmt::format("unknown key (allowed: {})", list));
      }
    }
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  // A value as the text a --set takes: scalars as written, lists and maps as flow YAML.
  std::string value_text(const YAML::Node& node, const std::string& path) {
    if (node.IsScalar()) return node.Scalar();
    if (node.IsSequence() || node.IsMap()) {
      YAML::Emitter e;
      e << YAML::Flow << node;
      return e.c_str();
    }
    fail(path, "want a value (got nothing)");
  }

  void check_name(const std::string& name, const std::string& path, const char* what) {
    bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
    for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
    if (!ok)
      fail(path, fmt::format("'{}' is not a usable {} name (letters, digits, '_' and '.', not first a digit)",
                             name, what));
  }

  TemplateList templates(const YAML::Node& node, const std::string& path, bool are_vars) {
    if (!node.IsMap())
      fail(path, "want a mapping of " + std::string(are_vars ? "name" : "recipe key") + ": value");
    TemplateList out;
    for (const auto& kv : node) {
      const std::string k = kv.first.Scalar();
      if (are_vars) check_name(k, join(path, k), "variable");
      if (!are_vars && k.empty()) fail(path, "an empty recipe key");
      out.emplace_back(k, value_text(kv.second, join(path, k)));
    }
    return out;
  }

  std::vector<AxisValue> values(const YAML::Node& node, const std::string& path) {
    std::vector<AxisValue> out;
    if (node.IsScalar()) {
      std::vector<int64_t> range;
      if (!parse_int_range(node.Scalar(), &range))
        fail(path,
             fmt::format(
                 "'{}' is neither a list nor a range such as 3..8 (int64 bounds, at most 100001 values)",
                 node.Scalar()));
      for (int64_t v : range) out.push_back({std::to_string(v), {}, {}});
      return out;
    }
    if (!node.IsSequence()) fail(path, "want a list of values or a range such as 3..8");
    for (size_t i = 0; i < node.size(); ++i) {
      const std::string p = fmt::format("{}[{}]", path, i);
      const YAML::Node item = node[i];
      if (item.IsScalar()) {
        out.push_back({item.Scalar(), {}, {}});
        continue;
      }
      check_keys(item, p, {"value", "set", "vars"});
      if (!item["value"] || !item["value"].IsScalar()) fail(join(p, "value"), "required (the value's text)");
      AxisValue v{item["value"].Scalar(), {}, {}};
      if (item["set"]) v.set = templates(item["set"], join(p, "set"), false);
      if (item["vars"]) v.vars = templates(item["vars"], join(p, "vars"), true);
      out.push_back(std::move(v));
    }
    if (out.empty()) fail(path, "an axis needs at least one value");
    return out;
  }

  SweepAxis axis(const YAML::Node& node, const std::string& path, int group) {
    if (!node.IsMap()) fail(path, "want an axis: {name: N, key: K, values: [...]} or {K: [...]}");
    SweepAxis a;
    a.group = group;
    if (node["values"] || node["name"] || node["key"]) {
      check_keys(node, path, {"name", "key", "values"});
      if (node["key"]) {
        if (!node["key"].IsScalar() || node["key"].Scalar().empty())
          fail(join(path, "key"), "want a recipe key");
        a.key = node["key"].Scalar();
      }
      if (node["name"]) {
        if (!node["name"].IsScalar()) fail(join(path, "name"), "want a name");
        a.name = node["name"].Scalar();
      } else if (!a.key.empty()) {
        a.name = a.key;
      } else {
        fail(join(path, "name"), "required (or give `key`)");
      }
      check_name(a.name, join(path, "name"), "axis");
      if (!node["values"]) fail(join(path, "values"), "required");
      a.values = values(node["values"], join(path, "values"));
    } else {
      if (node.size() != 1)
        fail(path,
             "a short axis is one `name: values` entry; use {name: N, key: K, values: [...]} otherwise");
      auto kv = *node.begin();
      a.name = kv.first.Scalar();
      check_name(a.name, path, "axis");
      if (a.name.find('.') != std::string::npos) a.key = a.name;  // a dotted name is a recipe key
      a.values = values(kv.second, join(path, a.name));
    }
    if (reserved_names().count(a.name))
      fail(path, fmt::format("'{}' is a results.csv column, not an axis name{}", a.name,
                             a.name == "seed" ? " (give seeds with `repeats` or `seeds`)" : ""));
    return a;
  }

  int64_t integer(const YAML::Node& node, const std::string& path, int64_t min) {
    int64_t v = 0;
    try {
      if (!node.IsScalar()) throw YAML::Exception(YAML::Mark::null_mark(), "");
      size_t used = 0;
      v = std::stoll(node.Scalar(), &used);
      if (used != node.Scalar().size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      fail(path, fmt::format("want an integer >= {}", min));
    }
    if (v < min) fail(path, fmt::format("{} is out of range (want an integer >= {})", v, min));
    return v;
  }

  SweepSpec parse(const std::string& text, const std::string& path) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      fail("", fmt::format("YAML syntax error at line {}, column {}: {}", e.mark.line + 1, e.mark.column + 1,
                           e.msg));
    }
    if (!root.IsMap()) fail("", "want a mapping with `recipe` and `axes`");
    check_keys(root, "",
               {"name", "recipe", "axes", "vars", "set", "label", "repeats", "seeds", "jobs", "threads"});
    SweepSpec s;
    s.source = path;
    s.name = fs::path(path).stem().string();
    if (root["name"]) s.name = value_text(root["name"], "name");
    if (!root["recipe"] || !root["recipe"].IsScalar() || root["recipe"].Scalar().empty())
      fail("recipe", "required: the base recipe (a path relative to the sweep file)");
    fs::path r = root["recipe"].Scalar();
    s.recipe = r.is_absolute() ? r.string() : (fs::path(path).parent_path() / r).lexically_normal().string();

    std::set<std::string> names;
    if (root["axes"]) {
      const YAML::Node axes = root["axes"];
      if (!axes.IsSequence()) fail("axes", "want a list of axes");
      for (size_t i = 0; i < axes.size(); ++i) {
        const std::string p = fmt::format("axes[{}]", i);
        const int group = static_cast<int>(i);
        std::vector<SweepAxis> group_axes;
        if (axes[i].IsMap() && axes[i]["zip"]) {
          check_keys(axes[i], p, {"zip"});
          const YAML::Node zip = axes[i]["zip"];
          if (!zip.IsSequence() || zip.size() == 0)
            fail(p + ".zip", "want a list of axes that advance together");
          for (size_t j = 0; j < zip.size(); ++j)
            group_axes.push_back(axis(zip[j], fmt::format("{}.zip[{}]", p, j), group));
          for (const SweepAxis& a : group_axes)
            if (a.values.size() != group_axes[0].values.size())
              fail(p + ".zip",
                   fmt::format("axes '{}' ({} values) and '{}' ({} values) differ in length",
                               group_axes[0].name, group_axes[0].values.size(), a.name, a.values.size()));
        } else {
          group_axes.push_back(axis(axes[i], p, group));
        }
        for (SweepAxis& a : group_axes) {
          if (!names.insert(a.name).second) fail(p, fmt::format("axis name '{}' given twice", a.name));
          s.axes.push_back(std::move(a));
        }
      }
    }
    if (root["vars"]) {
      s.vars = templates(root["vars"], "vars", true);
      for (const auto& [n, t] : s.vars)
        if (names.count(n)) fail("vars." + n, "the name of an axis; pick another");
    }
    if (root["set"]) s.set = templates(root["set"], "set", false);
    if (root["label"]) s.label = value_text(root["label"], "label");
    if (root["repeats"] && root["seeds"]) fail("repeats", "give `repeats` or `seeds`, not both");
    if (root["repeats"]) {
      const int64_t r = integer(root["repeats"], "repeats", 1);
      s.seeds.clear();
      for (int64_t i = 0; i < r; ++i) s.seeds.push_back(static_cast<uint64_t>(i));
    }
    if (root["seeds"]) {
      const YAML::Node seeds = root["seeds"];
      if (!seeds.IsSequence() || seeds.size() == 0) fail("seeds", "want a list of seeds, e.g. [0, 1, 2]");
      s.seeds.clear();
      std::set<uint64_t> seen;
      for (size_t i = 0; i < seeds.size(); ++i) {
        const uint64_t v = static_cast<uint64_t>(integer(seeds[i], fmt::format("seeds[{}]", i), 0));
        if (!seen.insert(v).second) fail(fmt::format("seeds[{}]", i), fmt::format("seed {} given twice", v));
        s.seeds.push_back(v);
      }
    }
    if (root["jobs"]) s.jobs = static_cast<int>(integer(root["jobs"], "jobs", 1));
    if (root["threads"]) s.threads = static_cast<int>(integer(root["threads"], "threads", 0));
    return s;
  }

 private:
  std::string source_;
};

std::string safe_id_part(const std::string& s) {
  std::string out;
  for (char c : s)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == '=')
               ? c
               : '_';
  return out;
}

// Expands `text` naming the place it came from in errors.
std::string expand_in(const SweepSpec& spec, const std::string& text, const TemplateList& vars,
                      const std::string& where) {
  try {
    return expand_template(text, vars);
  } catch (const SweepError& e) {
    throw SweepError(fmt::format("sweep {}: {}: {}", spec.source, where, e.what()));
  }
}

}  // namespace

bool parse_int_range(const std::string& text, std::vector<int64_t>* out) {
  const size_t dots = text.find("..");
  if (dots == std::string::npos) return false;
  auto number = [](const std::string& s, int64_t* v) {
    if (s.empty()) return false;
    size_t i = (s[0] == '-') ? 1 : 0;
    if (i == s.size()) return false;
    for (size_t k = i; k < s.size(); ++k)
      if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
    // from_chars, not stoll: a bound past int64 is "not a range", not an exception (fuzz_sweep found it).
    const auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return err == std::errc() && end == s.data() + s.size();
  };
  int64_t a = 0, b = 0;
  if (!number(text.substr(0, dots), &a) || !number(text.substr(dots + 2), &b)) return false;
  // The span in uint64_t: b - a in int64_t overflows for bounds of opposite signs near the limits.
  const uint64_t span = a > b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
                              : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
  if (span > 100000) return false;  // no accidental million-point axes
  out->clear();
  for (int64_t v = a;; v += (a <= b ? 1 : -1)) {
    out->push_back(v);
    if (v == b) break;
  }
  return true;
}

std::string expand_template(const std::string& text, const TemplateList& vars) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '{') {
      size_t j = i + 1;
      while (j < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_' || text[j] == '.'))
        ++j;
      if (j > i + 1 && j < text.size() && text[j] == '}' &&
          !std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
        const std::string name = text.substr(i + 1, j - i - 1);
        auto it = std::find_if(vars.rbegin(), vars.rend(), [&](const auto& kv) { return kv.first == name; });
        if (it == vars.rend()) {
          std::string known;
          for (const auto& kv : vars)
            if (known.find(" " + kv.first + ",") == std::string::npos) known += " " + kv.first + ",";
          if (!known.empty()) known.pop_back();
          throw SweepError(fmt::format("unknown variable '{}' in '{}' (known:{})", name, text, known));
        }
        out += it->second;
        i = j;
        continue;
      }
    }
    out += c;
  }
  return out;
}

SweepSpec parse_sweep(const std::string& text, const std::string& path) {
  return Parser(path).parse(text, path);
}

SweepSpec load_sweep(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SweepError(fmt::format("sweep {}: cannot read the file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_sweep(ss.str(), path);
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec) {
  // The groups (zips count once), in file order; the first varies slowest.
  std::vector<std::vector<size_t>> groups;
  for (size_t a = 0; a < spec.axes.size(); ++a) {
    if (a == 0 || spec.axes[a].group != spec.axes[a - 1].group) groups.emplace_back();
    groups.back().push_back(a);
  }
  std::vector<size_t> index(groups.size(), 0);
  std::vector<SweepPoint> points;
  std::map<std::string, size_t> ids;
  while (true) {
    SweepPoint p;
    TemplateList vars;
    std::vector<const AxisValue*> chosen(spec.axes.size());
    for (size_t g = 0; g < groups.size(); ++g)
      for (size_t a : groups[g]) chosen[a] = &spec.axes[a].values[index[g]];
    for (size_t a = 0; a < spec.axes.size(); ++a) {
      p.values.push_back(chosen[a]->value);
      vars.emplace_back(spec.axes[a].name, chosen[a]->value);
    }
    for (size_t a = 0; a < spec.axes.size(); ++a)
      for (const auto& [n, t] : chosen[a]->vars)
        vars.emplace_back(
            n, expand_in(spec, t, vars, spec.axes[a].name + "=" + chosen[a]->value + " vars." + n));
    for (const auto& [n, t] : spec.vars) vars.emplace_back(n, expand_in(spec, t, vars, "vars." + n));

    for (size_t a = 0; a < spec.axes.size(); ++a)
      if (!spec.axes[a].key.empty()) p.sets.push_back(spec.axes[a].key + "=" + chosen[a]->value);
    for (size_t a = 0; a < spec.axes.size(); ++a)
      for (const auto& [k, t] : chosen[a]->set)
        p.sets.push_back(k + "=" +
                         expand_in(spec, t, vars, spec.axes[a].name + "=" + chosen[a]->value + " set." + k));
    for (const auto& [k, t] : spec.set) p.sets.push_back(k + "=" + expand_in(spec, t, vars, "set." + k));

    std::string label;
    for (size_t a = 0; a < spec.axes.size(); ++a) {
      p.id += (a ? "_" : "") + safe_id_part(spec.axes[a].name + "=" + p.values[a]);
      label += (a ? " " : "") + spec.axes[a].name + "=" + p.values[a];
    }
    if (p.id.empty()) p.id = "base";
    p.label = spec.label.empty() ? label : expand_in(spec, spec.label, vars, "label");
    auto [it, fresh] = ids.emplace(p.id, points.size());
    if (!fresh)
      throw SweepError(
          fmt::format("sweep {}: points {} and {} get the same folder name '{}' (make the values differ "
                      "in letters or digits)",
                      spec.source, points[it->second].label, p.label, p.id));
    points.push_back(std::move(p));

    // Next index, the last group fastest.
    size_t g = groups.size();
    while (g > 0) {
      --g;
      if (++index[g] < spec.axes[groups[g][0]].values.size()) break;
      index[g] = 0;
      if (g == 0) return points;
    }
    if (groups.empty()) return points;
  }
}

std::vector<SweepRun> sweep_runs(const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  std::vector<SweepRun> runs;
  for (size_t i = 0; i < points.size(); ++i)
    for (uint64_t seed : spec.seeds) {
      SweepRun r;
      r.point = i;
      r.seed = seed;
      r.id = points[i].id + "_seed=" + std::to_string(seed);
      r.label = points[i].label + " seed " + std::to_string(seed);
      r.sets.push_back("threads=" + std::to_string(spec.threads));
      r.sets.insert(r.sets.end(), points[i].sets.begin(), points[i].sets.end());
      r.sets.push_back("seed=" + std::to_string(seed));
      runs.push_back(std::move(r));
    }
  return runs;
}

}  // namespace emu::train
