// emutrain.Policy: the recipe's `numerics` section (docs/recipes.md) as an object: the
// policy keys of core/numerics_policy.h for every module, plus overrides keyed by module
// path globs. emutrain.Numerics is what a policy resolves to for one module path, and
// emutrain.Mac the reduction numerics (mul, acc, out, chunk, acc_outer, fused) the ops take.
#include "python/src/policy.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/numerics_policy.h"
#include "numerics/approx_mul.h"
#include "numerics/format_spec.h"
#include "numerics/split_mul_spec.h"
#include "python/src/bindings.h"
#include "python/src/format_arg.h"

namespace emu::python {
namespace {

// A Python value as the text a recipe would hold: strings as they are, booleans as
// true/false, numbers as written, Formats by name, a list of numbers as user breakpoints.
std::string key_value(const std::string& key, py::handle v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) return py::str(v);
  if (py::isinstance<Format>(v)) return format_name(v.cast<Format>());
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    std::string s = "pwl:";
    bool first = true;
    for (py::handle x : v) {
      s += (first ? "" : ",") + std::string(py::str(x));
      first = false;
    }
    return s;
  }
  throw py::type_error(
      fmt::format("policy key '{}': a value is a string, number, bool, Format or (functions) a "
                  "list of breakpoints, got {}",
                  key, std::string(py::str(py::type::of(v).attr("__name__")))));
}

// keys {k: v, functions: {exp: ...}} as (key, value) pairs, functions.* flattened.
std::vector<std::pair<std::string, std::string>> key_values(const py::dict& keys) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto [k, v] : keys) {
    const std::string key = py::str(k);
    if (v.is_none()) continue;
    if (key == "functions" && py::isinstance<py::dict>(v)) {
      for (auto [fk, fv] : v.cast<py::dict>()) {
        const std::string name = "functions." + std::string(py::str(fk));
        out.emplace_back(name, key_value(name, fv));
      }
      continue;
    }
    out.emplace_back(key, key_value(key, v));
  }
  return out;
}

std::string mul_name(const MacPolicy& p) {
  if (p.mul_exact) return "exact";
  if (has_approx_mul(p.lut)) return approx_mul_spec_of(p);
  if (p.split != SplitMul::None) return split_mul_name(p.split);
  return format_name(p.mul);
}

std::string mac_repr(const MacPolicy& p) {
  std::string s =
      fmt::format("Mac(mul={}, acc={}, out={}", mul_name(p), format_name(p.acc), format_name(p.out));
  if (p.chunk > 0) s += fmt::format(", chunk={}, acc_outer={}", p.chunk, format_name(p.acc_outer));
  if (p.fused > 0) s += fmt::format(", fused={}", p.fused);
  return s + ")";
}

}  // namespace

// NumericsPolicy::set checks a key alone; resolving checks the keys together (fused must divide
// chunk, a split multiplier needs a deterministic acc), as a recipe's check does. A failed key
// leaves the policy as it was.
void Policy::set(const std::string& key, const std::string& value) {
  NumericsPolicy next = policy;
  next.set(key, value);
  next.resolve("");
  policy = next;
  defaults.emplace_back(key, value);
}

void Policy::set_override(const std::string& glob, const std::string& key, const std::string& value) {
  NumericsPolicy next = policy;
  next.set_override(glob, key, value);
  next.resolve(glob);  // a glob matches itself as a path: its override applies over the defaults
  policy = next;
  overrides.push_back({glob, key, value});
}

std::string Policy::repr() const {
  std::string s = "Policy(";
  bool first = true;
  for (const auto& [k, v] : defaults) {
    s += fmt::format("{}{}='{}'", first ? "" : ", ", k, v);
    first = false;
  }
  if (!overrides.empty()) {
    s += std::string(first ? "" : ", ") + "overrides=[";
    for (size_t i = 0; i < overrides.size(); ++i)
      s += fmt::format("{}('{}', '{}', '{}')", i ? ", " : "", overrides[i].glob, overrides[i].key,
                       overrides[i].value);
    s += "]";
  }
  return s + ")";
}

void bind_policy(py::module_& m) {
  py::class_<MacPolicy>(m, "Mac",
                        "The numerics of one reduction (numerics/mac.h): mul, acc, out, chunk, "
                        "acc_outer, fused; the ops' `mac` argument")
      .def_property_readonly("mul", &mul_name)
      .def_readwrite("mul_exact", &MacPolicy::mul_exact)
      .def_property(
          "acc", [](const MacPolicy& p) { return p.acc; },
          [](MacPolicy& p, py::handle f) { p.acc = format_arg(f, "acc"); })
      .def_property(
          "out", [](const MacPolicy& p) { return p.out; },
          [](MacPolicy& p, py::handle f) { p.out = format_arg(f, "out"); })
      .def_readwrite("chunk", &MacPolicy::chunk)
      .def_property(
          "acc_outer", [](const MacPolicy& p) { return p.acc_outer; },
          [](MacPolicy& p, py::handle f) { p.acc_outer = format_arg(f, "acc_outer"); })
      .def_readwrite("fused", &MacPolicy::fused)
      .def("copy", [](const MacPolicy& p) { return p; })
      .def("__repr__", &mac_repr);

  py::class_<LayerNumerics>(m, "Numerics", "What a Policy gives one module path (Policy.resolve)")
      .def_readonly("weights", &LayerNumerics::weights)
      .def_readonly("activations", &LayerNumerics::activations)
      .def_readonly("grads", &LayerNumerics::grads)
      .def_readonly("mac", &LayerNumerics::mac)
      .def_property_readonly(
          "emulation", [](const LayerNumerics& n) { return n.emulation == Emulation::Op ? "op" : "layer"; })
      .def_property_readonly("passthrough", &LayerNumerics::passthrough)
      .def("describe", &LayerNumerics::describe)
      .def("__repr__", [](const LayerNumerics& n) { return "Numerics(" + n.describe() + ")"; });

  py::class_<Policy>(m, "Policy", R"(A numerics policy: the keys of a recipe's numerics.default
(format, weights, activations, grads, mul, acc, out, chunk, acc_outer, fused, emulation,
sparsity, sparsity_on, sparsity_score, functions={name: mode}) for every module, and
overrides {glob: {key: value}} (or a list of {match: glob, key: value}) applied in order to
the modules whose path matches (docs/recipes.md). Values are checked at once; a bad one
raises ValueError with the engine's message.)")
      .def(py::init([](py::kwargs kwargs) {
        Policy p;
        py::object overrides = py::none();
        py::dict keys;
        for (auto [k, v] : kwargs) {
          if (std::string(py::str(k)) == "overrides")
            overrides = py::reinterpret_borrow<py::object>(v);
          else
            keys[k] = v;
        }
        for (const auto& [k, v] : key_values(keys)) p.set(k, v);
        if (py::isinstance<py::dict>(overrides)) {
          for (auto [glob, entries] : overrides.cast<py::dict>())
            for (const auto& [k, v] : key_values(entries.cast<py::dict>()))
              p.set_override(py::str(glob), k, v);
        } else if (!overrides.is_none()) {
          for (py::handle o : overrides) {
            py::dict entries = o.cast<py::dict>();
            if (!entries.contains("match"))
              throw py::value_error("overrides: a list item needs 'match' (a glob on module paths)");
            const std::string glob = py::str(entries["match"]);
            py::dict rest;
            for (auto [k, v] : entries)
              if (std::string(py::str(k)) != "match") rest[k] = v;
            for (const auto& [k, v] : key_values(rest)) p.set_override(glob, k, v);
          }
        }
        return p;
      }))
      .def(
          "set",
          [](Policy& p, const std::string& key, py::handle value) -> Policy& {
            p.set(key, key_value(key, value));
            return p;
          },
          py::arg("key"), py::arg("value"), py::return_value_policy::reference_internal,
          "Sets one key for every module; returns the policy")
      .def(
          "override",
          [](Policy& p, const std::string& glob, py::kwargs keys) -> Policy& {
            for (const auto& [k, v] : key_values(keys)) p.set_override(glob, k, v);
            return p;
          },
          py::arg("glob"), py::return_value_policy::reference_internal,
          "Keys for the modules whose path matches `glob` ('*' within a component, '**' across); returns the "
          "policy")
      .def(
          "resolve", [](const Policy& p, const std::string& path) { return p.policy.resolve(path); },
          py::arg("path") = "", "The Numerics of the module at `path`")
      .def_static("keys", &NumericsPolicy::keys, "The policy keys")
      .def(
          "to_recipe",
          [](const Policy& p) {
            // functions.<name> keys nest as in a recipe: functions: {exp: pwl:8}.
            auto put = [](py::dict& into, const std::string& key, const std::string& value) {
              if (key.rfind("functions.", 0) == 0) {
                if (!into.contains("functions")) into["functions"] = py::dict();
                into["functions"].cast<py::dict>()[py::str(key.substr(10))] = value;
              } else {
                into[py::str(key)] = value;
              }
            };
            py::dict d, def;
            for (const auto& [k, v] : p.defaults) put(def, k, v);
            d["default"] = def;
            py::list overrides;
            for (const auto& o : p.overrides) {
              py::dict entry;
              entry["match"] = o.glob;
              put(entry, o.key, o.value);
              overrides.append(entry);
            }
            if (!overrides.empty()) d["overrides"] = overrides;
            return d;
          },
          "The policy as a recipe's numerics section (a dict; one override entry per key)")
      .def_property_readonly("override_globs",
                             [](const Policy& p) {
                               std::vector<std::string> globs;
                               for (const auto& o : p.overrides)
                                 if (std::find(globs.begin(), globs.end(), o.glob) == globs.end())
                                   globs.push_back(o.glob);
                               return globs;
                             })
      .def("copy", [](const Policy& p) { return p; })
      .def("__copy__", [](const Policy& p) { return p; })
      .def("__deepcopy__", [](const Policy& p, py::dict) { return p; })
      .def(py::pickle(
          [](const Policy& p) {
            py::list overrides;
            for (const auto& o : p.overrides) overrides.append(py::make_tuple(o.glob, o.key, o.value));
            return py::make_tuple(p.defaults, overrides);
          },
          [](const py::tuple& t) {
            Policy p;
            for (const auto& [k, v] : t[0].cast<std::vector<std::pair<std::string, std::string>>>())
              p.set(k, v);
            for (py::handle o : t[1].cast<py::list>()) {
              auto [glob, k, v] = o.cast<std::tuple<std::string, std::string, std::string>>();
              p.set_override(glob, k, v);
            }
            return p;
          }))
      .def("__repr__", &Policy::repr);

  m.def("glob_match", &glob_match, py::arg("pattern"), py::arg("path"),
        "Whether a module path matches an override glob ('*' within a component, '**' across, '?' one "
        "character)");
}

}  // namespace emu::python
