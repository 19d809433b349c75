// Approximate multipliers: built-in models, the registry and plugins, and
// building/validating mantissa-product tables (numerics/approx_mul.h).
#include "numerics/approx_mul.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "numerics/format_spec.h"

namespace emu {
namespace {

// ---------------------------------------------------------------------------
// Built-in models. A finite nonzero binary32 x = (-1)^neg 2^e sig 2^-23 with
// sig in [2^23, 2^24) (binary32 subnormals normalised, so the models do not
// depend on where binary32's own range ends).

struct Parts {
  bool neg;
  int e;
  uint32_t sig;
};

Parts parts(float x) {
  const uint32_t u = float_bits(x);
  Parts p{(u >> 31) != 0, static_cast<int>((u >> 23) & 0xff) - 127, u & 0x7fffffu};
  if (p.e == -127) {  // subnormal: shift the leading one up to bit 23
    const int lz = __builtin_clz(p.sig) - 8;
    p.sig <<= lz;
    p.e = -126 - lz;
  } else {
    p.sig |= 0x800000u;
  }
  return p;
}

bool finite_nonzero(float x) { return x != 0.0f && x - x == 0.0f; }

// (-1)^neg sig 2^exp rounded to binary32 (the cast is round to nearest even).
float signed_value(bool neg, uint64_t sig, int exp) {
  const double v = pow2_scale(sig, exp);  // exact: sig has <= 53 bits here
  return static_cast<float>(neg ? -v : v);
}

// The model's names: built-ins are parsed, the rest registered.
struct Registry {
  std::mutex mu;
  std::map<std::string, ApproxMulFn> models;
  std::map<std::string, std::string> plugin_paths;                // name -> path it came from
  std::map<std::string, std::unique_ptr<ApproxMulTable>> tables;  // "name|format" -> table
};
Registry& registry() {
  static Registry r;
  return r;
}

// trunc<k> for k = 0..23 as plain function pointers.
template <int K>
float trunc_k(float a, float b) {
  return approx_mul_trunc(K, a, b);
}
template <int... K>
constexpr ApproxMulFn trunc_fn(int k, std::integer_sequence<int, K...>) {
  constexpr ApproxMulFn fns[] = {&trunc_k<K>...};
  return fns[k];
}

// k of "trunc<k>", or -1.
int trunc_bits(const std::string& name) {
  if (name.rfind("trunc", 0) != 0 || name.size() < 6 || name.size() > 7) return -1;
  int k = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    k = k * 10 + (name[i] - '0');
  }
  if (name.size() == 7 && name[5] == '0') return -1;  // "trunc04"
  return k <= 23 ? k : -1;
}

bool builtin_name(const std::string& name) { return name == "mitchell" || trunc_bits(name) >= 0; }

std::string known_names_locked(const Registry& r) {
  std::string s = "mitchell, trunc<k> (k = 0..23)";
  for (const auto& [name, fn] : r.models) s += ", " + name;
  return s;
}

ApproxMulFn find_locked(Registry& r, const std::string& name) {
  if (name == "mitchell") return &approx_mul_mitchell;
  const int k = trunc_bits(name);
  if (k >= 0) return trunc_fn(k, std::make_integer_sequence<int, 24>{});
  auto it = r.models.find(name);
  if (it != r.models.end()) return it->second;
  throw ApproxMulError(
      fmt::format("unknown approximate multiplier '{}'; known: {}", name, known_names_locked(r)));
}

void register_locked(Registry& r, const std::string& name, ApproxMulFn fn) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  if (!ok)
    throw ApproxMulError(fmt::format("approximate multiplier name '{}': use 1 to 64 of a-z, 0-9, _", name));
  if (builtin_name(name))
    throw ApproxMulError(fmt::format("approximate multiplier name '{}' is a built-in's name", name));
  auto it = r.models.find(name);
  if (it != r.models.end() && it->second != fn)
    throw ApproxMulError(
        fmt::format("approximate multiplier '{}' is already registered with another function", name));
  r.models[name] = fn;
}

// F must be a storage eXmY format with <= 11 fraction bits and a sign-symmetric
// rounding (the table holds magnitudes).
void check_format(const Format& f, const std::string& what) {
  auto bad = [&](const std::string& why) {
    throw ApproxMulError(fmt::format("{}: format '{}' {}", what, format_name(f), why));
  };
  if (f.family != Family::Ieee || f.accumulator_only) bad("is not an eXmY storage format");
  if (f.man_bits > 11) bad("has more than 11 fraction bits (the table would have over 2^22 entries)");
  if (f.rounding != Rounding::NearestEven && f.rounding != Rounding::TowardZero &&
      f.rounding != Rounding::NearestAway)
    bad("has a rounding mode the table cannot hold (it stores magnitudes): use rne, rtz or rna");
  if (f.emin > 0) bad("has no binade at exponent 0 for the table's reference products");
}

// floor(log2 v) of a positive binary64 normal.
int binade(double v) { return static_cast<int>((double_bits(v) >> 52) & 0x7ff) - 1023; }

std::string show(float x) { return fmt::format("{} ({:a})", x, static_cast<double>(x)); }

}  // namespace

float approx_mul_mitchell(float a, float b) {
  if (!finite_nonzero(a) || !finite_nonzero(b)) return a * b;  // zeros, Inf, NaN as IEEE
  // log2(2^e (1 + x)) ~ e + x: add, then take the antilog the same way.
  const Parts x = parts(a), y = parts(b);
  const uint64_t s = static_cast<uint64_t>(x.sig - 0x800000u) + (y.sig - 0x800000u);  // (xa + xb) 2^23
  if (s < 0x800000u) return signed_value(x.neg != y.neg, 0x800000u + s, x.e + y.e - 23);
  return signed_value(x.neg != y.neg, s, x.e + y.e + 1 - 23);  // 2^(e+1) (xa + xb)
}

float approx_mul_trunc(int k, float a, float b) {
  if (!finite_nonzero(a) || !finite_nonzero(b)) return a * b;
  const Parts x = parts(a), y = parts(b);
  const uint32_t keep = ~((1u << (23 - k)) - 1);
  const uint64_t prod = static_cast<uint64_t>(x.sig & keep) * (y.sig & keep);  // exact, <= 48 bits
  return signed_value(x.neg != y.neg, prod, x.e + y.e - 46);
}

void register_approx_mul(const std::string& name, ApproxMulFn fn) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  register_locked(r, name, fn);
}

void load_approx_mul_plugin(const std::string& name, const std::string& path) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.plugin_paths.find(name);
  if (it != r.plugin_paths.end() && it->second == path) return;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open for the process
  if (!handle) {
    const char* why = dlerror();
    throw ApproxMulError(fmt::format("approximate multiplier '{}': cannot load plugin '{}': {}", name, path,
                                     why ? why : "dlopen failed"));
  }
  dlerror();
  void* sym = dlsym(handle, kApproxMulSymbol);
  if (!sym) {
    dlclose(handle);
    throw ApproxMulError(
        fmt::format("approximate multiplier '{}': plugin '{}' does not export {} "
                    "(extern \"C\" float {}(float, float))",
                    name, path, kApproxMulSymbol, kApproxMulSymbol));
  }
  ApproxMulFn fn = reinterpret_cast<ApproxMulFn>(sym);
  register_locked(r, name, fn);
  r.plugin_paths[name] = path;
}

ApproxMulFn find_approx_mul(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return find_locked(r, name);
}

std::string known_approx_mul_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return known_names_locked(r);
}

ApproxMulLut ApproxMulTable::lut() const {
  ApproxMulLut l;
  l.entries = entries.data();
  l.man_bits = format.man_bits;
  l.fast_emin = format.emin;
  const int top = binade(format.max_finite);
  // The top binade counts when it holds every significand up to 2 - 2^-Y.
  const double full = pow2_scale((uint64_t{2} << format.man_bits) - 1, top - format.man_bits);
  l.fast_emax = format.max_finite == full ? top : top - 1;
  return l;
}

std::string ApproxMulTable::spec() const { return "lut:" + name + ":" + format_name(format); }

ApproxMulTable build_approx_table(const std::string& name, const Format& f) {
  const std::string what = fmt::format("approximate multiplier '{}'", name);
  check_format(f, what);
  const ApproxMulFn fn = find_approx_mul(name);
  ApproxMulTable t;
  t.name = name;
  t.format = f;
  const int y = f.man_bits;
  const uint32_t n = 1u << y;
  t.entries.resize(static_cast<size_t>(n) * n);
  // Rounding to Y fraction bits within a binade, with F's mode and no range limits.
  Format sig_round = parse_format(fmt::format("e8m{}", y));
  sig_round.rounding = f.rounding;
  const std::string in = fmt::format("{} for {}", what, format_name(f));
  for (uint32_t ma = 0; ma < n; ++ma) {
    for (uint32_t mb = 0; mb < n; ++mb) {
      const float a = static_cast<float>(1.0 + ma * std::ldexp(1.0, -y));
      const float b = static_cast<float>(1.0 + mb * std::ldexp(1.0, -y));
      const float r = fn(a, b);
      if (!(r >= 1.0f && r < 4.0f))
        throw ApproxMulError(
            fmt::format("{}: its product of {} x {} (mantissas 0x{:x}, 0x{:x}) is {}, outside "
                        "[1, 4): a mantissa table with a carry bit cannot hold it",
                        in, show(a), show(b), ma, mb, show(r)));
      const double rr = round_value(sig_round, r);
      if (rr >= 4.0)
        throw ApproxMulError(
            fmt::format("{}: its product of {} x {} (mantissas 0x{:x}, 0x{:x}) is {}, which "
                        "rounds to 4 at {} fraction bits: beyond the carry bit",
                        in, show(a), show(b), ma, mb, show(r), y));
      const uint32_t carry = rr >= 2.0 ? 1 : 0;
      const uint32_t frac = static_cast<uint32_t>(std::ldexp(rr, y - static_cast<int>(carry))) - n;
      t.entries[(ma << y) | mb] = static_cast<uint16_t>((carry << y) | frac);
    }
  }
  // Validation: every pair through the lookup equals the model rounded into F,
  // at the reference exponent and (where F has the binade) with a scaled by -1/2.
  const ApproxMulLut lut = t.lut();
  const bool shifted = f.emin <= -1;
  for (uint32_t ma = 0; ma < n; ++ma) {
    for (uint32_t mb = 0; mb < n; ++mb) {
      const float a0 = static_cast<float>(1.0 + ma * std::ldexp(1.0, -y));
      const float b = static_cast<float>(1.0 + mb * std::ldexp(1.0, -y));
      for (int pass = 0; pass < (shifted ? 2 : 1); ++pass) {
        const float a = pass == 0 ? a0 : -0.5f * a0;
        const double want = round_value(f, fn(a, b));
        const double mag = want < 0 ? -want : want;
        if (!(mag >= f.min_normal && mag <= f.max_finite)) continue;  // only the normal range is comparable
        const double got = approx_mul_lut(lut, f, a, b);
        if (double_bits(got) != double_bits(want))
          throw ApproxMulError(fmt::format(
              "{}: the table gives {} for {} x {} (mantissas 0x{:x}, 0x{:x}) but the model rounded into "
              "the format gives {}{}",
              in, got, show(a), show(b), ma, mb, want,
              pass == 0 ? "" : " (the model's product must scale with the operands' exponents and signs)"));
      }
    }
  }
  return t;
}

const ApproxMulTable& cached_approx_table(const std::string& name, const Format& f) {
  Registry& r = registry();
  const std::string key = name + "|" + format_name(f);
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.tables.find(key);
    if (it != r.tables.end()) return *it->second;
  }
  auto t = std::make_unique<ApproxMulTable>(build_approx_table(name, f));  // outside the lock: slow
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.tables.find(key);
  if (it == r.tables.end()) it = r.tables.emplace(key, std::move(t)).first;
  return *it->second;
}

double approx_mul_value(const ApproxMulTable& t, float a, float b) {
  return approx_mul_lut(t.lut(), t.format, a, b);
}

bool is_approx_mul_spec(const std::string& s) { return s.rfind("lut:", 0) == 0; }

ApproxMulSpec parse_approx_mul_spec(const std::string& s) {
  const size_t colon = s.find(':', 4);
  if (!is_approx_mul_spec(s) || colon == std::string::npos || colon == 4 || colon + 1 == s.size())
    throw ApproxMulError(
        fmt::format("'{}' is not an approximate multiplier spec: expected lut:<name>:<format>, "
                    "e.g. lut:mitchell:e5m7 (known names: {})",
                    s, known_approx_mul_names()));
  ApproxMulSpec spec;
  spec.name = s.substr(4, colon - 4);
  find_approx_mul(spec.name);  // unknown names: the error lists the known ones
  const std::string format = s.substr(colon + 1);
  try {
    spec.format = parse_format(format);
  } catch (const FormatError& e) {
    throw ApproxMulError(fmt::format("'{}': bad format '{}': {}", s, format, e.what()));
  }
  check_format(spec.format, fmt::format("'{}'", s));
  return spec;
}

void set_approx_mul(MacPolicy& p, const std::string& spec) {
  const ApproxMulSpec s = parse_approx_mul_spec(spec);
  const ApproxMulTable& t = cached_approx_table(s.name, s.format);
  p.mul_exact = false;
  p.mul = t.format;
  p.lut = t.lut();
}

std::string approx_mul_spec_of(const MacPolicy& p) {
  if (!has_approx_mul(p.lut)) return "";
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& [key, t] : r.tables)
    if (t->entries.data() == p.lut.entries) return t->spec();
  return "lut:?:" + format_name(p.mul);
}

}  // namespace emu
