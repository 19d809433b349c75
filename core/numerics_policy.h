// Numerics policies: which formats a layer reads, multiplies, accumulates and
// writes in (docs/contract.md sections 4 and 5), chosen per module by name globs.
//
//   NumericsPolicy p;                          // plain fp32 everywhere
//   p.set("format", "e5m2");                   // weights, activations, grads, mul, acc, out
//   p.set("acc", "fp32");
//   p.set_override("layer4.*.conv2", "mul", "exact");
//   LayerNumerics n = p.resolve("layer4.1.conv2");
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/sparsity_spec.h"
#include "numerics/format.h"
#include "numerics/mac_policy.h"
#include "numerics/pwl.h"

namespace emu {

// Op: every multiply, accumulate and element-wise result is emulated (the
// default). Layer: the layer computes in plain fp32 and only its output is
// rounded, as QPyTorch and GoldenEye do, so users can compare the two.
enum class Emulation : uint8_t { Op, Layer };

// How a non-linear function is evaluated: FunctionMode and FunctionApprox
// (exact, or a piecewise-linear approximation) are in numerics/pwl.h.

enum class Function : uint8_t { Exp, Log, Tanh, Sigmoid, Gelu, Silu, SoftmaxExp, Rsqrt, Reciprocal, Count };
const char* function_name(Function f);

struct LayerNumerics {
  // Plain fp32: products rounded to fp32 like native float arithmetic (not
  // MacPolicy's exact-product default).
  LayerNumerics() { mac.mul_exact = false; }

  Format weights;      // read format of parameters
  Format activations;  // read format of the layer's inputs
  Format grads;        // read format of incoming gradients
  MacPolicy mac;       // mul / acc / out / chunk / acc_outer of every reduction
  Emulation emulation = Emulation::Op;
  SparsitySpec sparsity;  // N:M masks on weight and/or gradient reads (core/sparsity.h)
  // Per function: exact (default) or pwl (exp, tanh, sigmoid, gelu, silu,
  // softmax_exp; softmax_exp's pieces are exp's). Applied under both emulation
  // modes (the function computed is part of the model, not a rounding).
  FunctionApprox functions[static_cast<int>(Function::Count)] = {};
  const FunctionApprox& function(Function f) const { return functions[static_cast<int>(f)]; }

  const Format& out() const { return mac.out; }
  // Plain fp32: every format is fp32 round-to-nearest, products rounded to fp32,
  // no chunks. Native float arithmetic then gives exactly the emulated bits, so
  // kernels may take their fast path.
  bool passthrough() const;
  std::string describe() const;  // "weights=fp32 activations=fp32 ... mul=fp32 acc=fp32 out=fp32"
};

class NumericsPolicy {
 public:
  NumericsPolicy();

  // Keys: format (shorthand for weights, activations, grads, mul, acc and out,
  // applied before the other keys; a block format sets only the three reads and
  // leaves mul, acc and out fp32), weights, activations, grads, mul (a format
  // or "exact"), acc, out, chunk (an integer >= 0), acc_outer, fused (an integer in
  // 0 .. 65536 that divides chunk when both are set: docs/contract.md section 4.8), emulation ("op" or
  // "layer"), functions.<exp|log|tanh|sigmoid|gelu|silu|softmax_exp|rsqrt|
  // reciprocal> ("exact"; for exp, tanh, sigmoid, gelu, silu and softmax_exp also
  // "pwl:<K>" or user breakpoints "pwl:<b0>,<b1>,...", numerics/pwl.h). Values are checked at once; errors
  // name the key, the value and what is allowed (`where` prefixes the key path, e.g. "numerics.default"). N:M
  // sparsity (core/sparsity_spec.h, docs/sparsity.md): sparsity ("N:M" or "none"), sparsity_on ("weights",
  // "grads", "both"), sparsity_score
  // ("magnitude", "random" or a registered user function).
  void set(const std::string& key, const std::string& value, const std::string& where = "numerics.default");
  // The same keys for modules whose path matches `glob`: '*' matches within one
  // dotted component, '**' across components, '?' one character. Overrides apply
  // in the order given, after the default.
  void set_override(const std::string& glob, const std::string& key, const std::string& value);

  LayerNumerics resolve(const std::string& module_path) const;
  static const std::vector<std::string>& keys();

 private:
  struct Entry {
    std::string key, value;
  };
  struct Override {
    std::string glob;
    std::vector<Entry> entries;
  };
  static void apply(LayerNumerics& n, const std::vector<Entry>& entries, const std::string& where);
  std::vector<Entry> defaults_;
  std::vector<Override> overrides_;
};

bool glob_match(std::string_view pattern, std::string_view name);

}  // namespace emu
