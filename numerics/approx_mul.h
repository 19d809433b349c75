// Approximate multipliers (docs/approx_mul.md): functional models, their
// registry and plugins, and the mantissa-product tables built from them
// (the lookup itself: numerics/approx_mul_lut.h).
//
//   ApproxMulTable t = build_approx_table("mitchell", parse_format("e5m7"));
//   double p = approx_mul_value(t, 1.5f, 1.5f);         // 2.0 (Mitchell)
//   set_approx_mul(policy.mac, "lut:trunc4:bf16");      // what `mul: lut:...` does
//
// A functional model is `float f(float a, float b)`: the multiplier's product
// of two binary32 values. Built in: `mitchell` (Mitchell's logarithmic
// multiplier on the significands) and `trunc<k>`, k = 0..23 (both significands
// truncated to k fraction bits, product exact, then rounded to binary32).
// Users add models compiled in (register_approx_mul) or from a shared library
// exporting the C ABI below (load_approx_mul_plugin, or the recipe's
// numerics.approx_multipliers: {name: path/to/lib.so}).
//
// The plugin C ABI: the library exports
//     extern "C" float emutrain_approx_mul(float a, float b);
// a pure function (same result for the same arguments, callable from any
// thread). Only its products of significands in [1, 2) at a reference
// exponent are used: they must lie in [1, 4) (see examples/approx_mul_plugin/).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/approx_mul_lut.h"
#include "numerics/format.h"
#include "numerics/mac.h"

namespace emu {

// The symbol a plugin exports.
constexpr const char* kApproxMulSymbol = "emutrain_approx_mul";

using ApproxMulFn = float (*)(float, float);

// A bad model name, plugin, spec or table (the message names what and lists known names).
class ApproxMulError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Built-in models, also usable directly.
float approx_mul_mitchell(float a, float b);
float approx_mul_trunc(int k, float a, float b);

// Adds a model under `name` ([a-z0-9_], not a built-in's name). Registering the
// same function again under the same name is allowed; another one is an error.
void register_approx_mul(const std::string& name, ApproxMulFn fn);
// dlopen()s `path` and registers its emutrain_approx_mul under `name`; loading
// the same path under the same name again does nothing. Errors name the path.
void load_approx_mul_plugin(const std::string& name, const std::string& path);
// The model of a name (built-in or registered); throws ApproxMulError listing the known names.
ApproxMulFn find_approx_mul(const std::string& name);
// "mitchell, trunc<k> (k = 0..23)" and the registered names, for messages.
std::string known_approx_mul_names();

// A built table: the model's name, the format, and the entries of
// numerics/approx_mul_lut.h.
struct ApproxMulTable {
  std::string name;               // the model
  Format format;                  // eXmY, man_bits <= 11, rounding rne, rtz or rna
  std::vector<uint16_t> entries;  // 2^(2Y): entries[(ma << Y) | mb] = (carry << Y) | frac
  ApproxMulLut lut() const;       // the plain-data view (points into entries)
  std::string spec() const;       // "lut:<name>:<format>"
};

// Builds the table of model `name` for format f and validates it exhaustively
// (every mantissa pair at the reference exponent 0, and again with the
// operands scaled by -2^-1 and 2^0 where the format's range allows, so that a
// model whose product is not exponent-independent is caught): a mismatch or a
// product outside [1, 4) is an ApproxMulError naming the pair. Also checks f
// (eXmY, not accumulator-only, man_bits <= 11, rounding rne/rtz/rna).
ApproxMulTable build_approx_table(const std::string& name, const Format& f);

// The table of (name, f), built once per process and kept (thread-safe); what
// policies point to.
const ApproxMulTable& cached_approx_table(const std::string& name, const Format& f);

// The product of a and b under the table, a value of its format.
double approx_mul_value(const ApproxMulTable& t, float a, float b);

// "lut:<name>:<format>" specs: whether s starts with "lut:", and its parts.
bool is_approx_mul_spec(const std::string& s);
struct ApproxMulSpec {
  std::string name;
  Format format;
};
ApproxMulSpec parse_approx_mul_spec(const std::string& s);  // throws ApproxMulError

// p.mul = the spec's format, p.mul_exact = false, p.lut = its cached table.
void set_approx_mul(MacPolicy& p, const std::string& spec);
// "lut:<name>:<format>" of a policy's table (a cached one), or "" when none.
std::string approx_mul_spec_of(const MacPolicy& p);

}  // namespace emu
