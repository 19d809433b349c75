#include "core/numerics_policy.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/split_stats.h"
#include "numerics/approx_mul.h"
#include "numerics/format_spec.h"
#include "numerics/split_mul_spec.h"

namespace emu {
namespace {

constexpr const char* kFunctionNames[] = {"exp",  "log",         "tanh",  "sigmoid",   "gelu",
                                          "silu", "softmax_exp", "rsqrt", "reciprocal"};

[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& value,
                      const std::string& why) {
  throw std::invalid_argument(fmt::format("{}.{}: '{}' {}", where, key, value, why));
}

Format storage_format(const std::string& where, const std::string& key, const std::string& value) {
  Format f;
  try {
    f = parse_format(value);
    require_storage(f, key);
  } catch (const FormatError& e) {
    bad(where, key, value, fmt::format("is not usable: {}", e.what()));
  }
  return f;
}

Format any_format(const std::string& where, const std::string& key, const std::string& value) {
  try {
    return parse_format(value);
  } catch (const FormatError& e) {
    bad(where, key, value, fmt::format("is not usable: {}", e.what()));
  }
}

// f itself, or an error if it is a block format: mul / acc / acc_outer / out round
// one value at a time, and a block format needs a whole block (docs/block_formats.md).
Format not_block(const std::string& where, const std::string& key, const std::string& value,
                 const Format& f) {
  try {
    require_element_format(f, key);
  } catch (const FormatError& e) {
    bad(where, key, value, fmt::format("is not usable: {}", e.what()));
  }
  return f;
}

}  // namespace

const char* function_name(Function f) { return kFunctionNames[static_cast<int>(f)]; }

bool LayerNumerics::passthrough() const {
  return emulation == Emulation::Op && is_plain_fp32(weights) && is_plain_fp32(activations) &&
         is_plain_fp32(grads) && !mac.mul_exact && is_plain_fp32(mac.mul) && is_plain_fp32(mac.acc) &&
         is_plain_fp32(mac.out) && mac.chunk == 0 && mac.fused == 0;
}

std::string LayerNumerics::describe() const {
  std::string s = fmt::format("weights={} activations={} grads={} mul={} acc={} out={}", format_name(weights),
                              format_name(activations), format_name(grads),
                              mac.mul_exact                 ? "exact"
                              : has_approx_mul(mac.lut)     ? approx_mul_spec_of(mac)
                              : mac.split != SplitMul::None ? split_mul_name(mac.split)
                                                            : format_name(mac.mul),
                              format_name(mac.acc), format_name(mac.out));
  if (mac.chunk > 0) s += fmt::format(" chunk={} acc_outer={}", mac.chunk, format_name(mac.acc_outer));
  if (mac.fused > 0) s += fmt::format(" fused={}", mac.fused);
  if (emulation == Emulation::Layer) s += " emulation=layer";
  if (sparsity.enabled()) s += " sparsity=" + sparsity.describe();
  for (int i = 0; i < static_cast<int>(Function::Count); ++i)
    if (functions[i].pwl()) s += fmt::format(" {}={}", kFunctionNames[i], emu::describe(functions[i]));
  return s;
}

NumericsPolicy::NumericsPolicy() = default;

const std::vector<std::string>& NumericsPolicy::keys() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> v = {"format", "weights", "activations", "grads", "mul",      "acc",
                                  "out",    "chunk",   "acc_outer",   "fused", "emulation"};
    for (const char* s : {"sparsity", "sparsity_on", "sparsity_score"}) v.push_back(s);
    for (const char* f : kFunctionNames) v.push_back(std::string("functions.") + f);
    return v;
  }();
  return k;
}

void NumericsPolicy::apply(LayerNumerics& n, const std::vector<Entry>& entries, const std::string& where) {
  // `format` first, so that specific keys win whatever order they were given in.
  for (int pass = 0; pass < 2; ++pass) {
    for (const Entry& e : entries) {
      const std::string& k = e.key;
      const std::string& v = e.value;
      if ((k == "format") != (pass == 0)) continue;
      if (k == "format") {
        Format f = storage_format(where, k, v);
        n.weights = n.activations = n.grads = n.mac.mul = n.mac.acc = n.mac.out = f;
        n.mac.mul_exact = false;
        n.mac.lut = ApproxMulLut{};
        n.mac.split = SplitMul::None;
        // A block format is a read format only: the reads take it, products, sums and
        // results stay fp32 (docs/block_formats.md).
        if (is_block(f)) n.mac.mul = n.mac.acc = n.mac.out = Format{};
      } else if (k == "weights") {
        n.weights = storage_format(where, k, v);
      } else if (k == "activations") {
        n.activations = storage_format(where, k, v);
      } else if (k == "grads") {
        n.grads = storage_format(where, k, v);
      } else if (k == "out") {
        n.mac.out = not_block(where, k, v, storage_format(where, k, v));
      } else if (k == "mul" && is_approx_mul_spec(v)) {
        // lut:<name>:<format>: an approximate multiplier's table (docs/approx_mul.md).
        try {
          set_approx_mul(n.mac, v);
        } catch (const ApproxMulError& e) {
          bad(where, k, v, fmt::format("is not usable: {}", e.what()));
        }
        n.mac.split = SplitMul::None;
      } else if (k == "mul" && is_split_mul_spec(v)) {
        // split:<scheme>: APE's split multiplication (docs/contract.md section 5.6).
        try {
          set_split_mul(n.mac, parse_split_mul(v));
        } catch (const std::invalid_argument& e) {
          bad(where, k, v, fmt::format("is not usable: {}", e.what()));
        }
      } else if (k == "mul") {
        n.mac.lut = ApproxMulLut{};
        n.mac.split = SplitMul::None;
        n.mac.mul_exact = v == "exact";
        if (!n.mac.mul_exact) n.mac.mul = not_block(where, k, v, any_format(where, k, v));
      } else if (k == "acc") {
        n.mac.acc = not_block(where, k, v, any_format(where, k, v));
      } else if (k == "acc_outer") {
        n.mac.acc_outer = not_block(where, k, v, any_format(where, k, v));
      } else if (k == "chunk") {
        size_t used = 0;
        long c = -1;
        try {
          c = std::stol(v, &used);
        } catch (const std::exception&) {
        }
        if (used != v.size() || c < 0 || c > (1L << 30)) bad(where, k, v, "is not a whole number >= 0");
        n.mac.chunk = static_cast<int>(c);
      } else if (k == "fused") {
        // Fused runs of F products (docs/contract.md section 4.8); 65536 bounds the
        // exact run accumulator's headroom (numerics/exact_run.h).
        size_t used = 0;
        long f = -1;
        try {
          f = std::stol(v, &used);
        } catch (const std::exception&) {
        }
        if (used != v.size() || f < 0 || f > 65536) bad(where, k, v, "is not a whole number in 0 .. 65536");
        n.mac.fused = static_cast<int>(f);
      } else if (k == "emulation") {
        if (v == "op")
          n.emulation = Emulation::Op;
        else if (v == "layer")
          n.emulation = Emulation::Layer;
        else
          bad(where, k, v, "is not an emulation mode; allowed: op, layer");
      } else if (k == "sparsity") {
        parse_sparsity_ratio(where, v, n.sparsity);
      } else if (k == "sparsity_on") {
        parse_sparsity_on(where, v, n.sparsity);
      } else if (k == "sparsity_score") {
        parse_sparsity_score(where, v, n.sparsity);
      } else if (k.rfind("functions.", 0) == 0) {
        std::string name = k.substr(10);
        int idx = -1;
        for (int i = 0; i < static_cast<int>(Function::Count); ++i)
          if (name == kFunctionNames[i]) idx = i;
        if (idx < 0)
          bad(where, k, v,
              "names no function; allowed: exp, log, tanh, sigmoid, gelu, silu, softmax_exp, rsqrt, "
              "reciprocal");
        const Function fn = static_cast<Function>(idx);
        PwlFunction pf = PwlFunction::Exp;
        bool has_pwl = true;
        switch (fn) {
          case Function::Exp:
          case Function::SoftmaxExp:
            pf = PwlFunction::Exp;
            break;
          case Function::Tanh:
            pf = PwlFunction::Tanh;
            break;
          case Function::Sigmoid:
            pf = PwlFunction::Sigmoid;
            break;
          case Function::Gelu:
            pf = PwlFunction::Gelu;
            break;
          case Function::Silu:
            pf = PwlFunction::Silu;
            break;
          default:
            has_pwl = false;
        }
        if (!has_pwl && v != "exact")
          bad(where, k, v,
              "is not a function mode; allowed: exact (pwl:<K> and breakpoints exist for exp, tanh, sigmoid, "
              "gelu, "
              "silu, softmax_exp)");
        try {
          n.functions[idx] = has_pwl ? parse_function_approx(pf, v) : FunctionApprox{};
        } catch (const std::invalid_argument& e) {
          bad(where, k, v, e.what());
        }
      } else {
        std::string allowed;
        for (const std::string& key : keys()) allowed += (allowed.empty() ? "" : ", ") + key;
        throw std::invalid_argument(fmt::format("{}: unknown key '{}'; allowed: {}", where, k, allowed));
      }
    }
  }
  // Fused runs never straddle a chunk boundary (docs/contract.md section 4.8),
  // whichever key came last.
  if (n.mac.fused > 0 && n.mac.chunk > 0 && n.mac.chunk % n.mac.fused != 0)
    throw std::invalid_argument(fmt::format(
        "{}: chunk {} is not a multiple of fused {} (a fused run must not straddle a chunk boundary)", where,
        n.mac.chunk, n.mac.fused));
  // A split multiplier with an :sr accumulator, whichever key came last.
  try {
    check_split_policy(n.mac);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", where, e.what()));
  }
}

void NumericsPolicy::set(const std::string& key, const std::string& value, const std::string& where) {
  LayerNumerics probe;
  apply(probe, {{key, value}}, where);  // validate now, with the key path in the message
  defaults_.push_back({key, value});
}

void NumericsPolicy::set_override(const std::string& glob, const std::string& key, const std::string& value) {
  std::string where = "numerics.overrides['" + glob + "']";
  LayerNumerics probe;
  apply(probe, {{key, value}}, where);
  for (Override& o : overrides_) {
    if (o.glob == glob) {
      o.entries.push_back({key, value});
      return;
    }
  }
  overrides_.push_back({glob, {{key, value}}});
}

LayerNumerics NumericsPolicy::resolve(const std::string& module_path) const {
  LayerNumerics n;
  apply(n, defaults_, "numerics.default");
  for (const Override& o : overrides_)
    if (glob_match(o.glob, module_path)) apply(n, o.entries, "numerics.overrides['" + o.glob + "']");
  // split:auto and split:fp32f count, per layer, the blocks inside fp32f's range (core/split_stats.h).
  if (!n.mac.mul_exact && (n.mac.split == SplitMul::Auto || n.mac.split == SplitMul::Fp32F))
    n.mac.stats_slot = split_stats_slot(module_path, n.mac.split);
  return n;
}

bool glob_match(std::string_view p, std::string_view s) {
  if (p.empty()) return s.empty();
  if (p.substr(0, 2) == "**") {
    for (size_t i = 0; i <= s.size(); ++i)
      if (glob_match(p.substr(2), s.substr(i))) return true;
    return false;
  }
  if (p[0] == '*') {
    for (size_t i = 0; i <= s.size(); ++i) {
      if (glob_match(p.substr(1), s.substr(i))) return true;
      if (i < s.size() && s[i] == '.') break;  // '*' stays within one component
    }
    return false;
  }
  if (s.empty()) return false;
  if (p[0] == '?' ? s[0] != '.' : p[0] == s[0]) return glob_match(p.substr(1), s.substr(1));
  return false;
}

}  // namespace emu
