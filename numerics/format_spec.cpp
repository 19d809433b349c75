#include "numerics/format_spec.h"

#include <fmt/format.h>

#include <cctype>
#include <vector>

#include "numerics/round.h"

namespace emu {
namespace {

constexpr const char* kModifiers = "rne, rtz, rup, rdn, rna, sr, nosub, sat, wrap";
constexpr const char* kBases =
    "eXmY (X 1..8, Y 0..23; accumulators up to e11m52), fp32, tf32, bf16, fp16, fp64, fp8_e5m2, "
    "fp8_e4m3, fp6_e3m2, fp6_e2m3, fp4_e2m1, posit<n>_<es>, fixed<w>_<f>, int<w>";

struct Alias {
  const char* name;
  int exp_bits, man_bits;
  Specials specials;
  bool canonical;  // printed by format_name (fp8_e5m2 is plain e5m2)
};
constexpr Alias kAliases[] = {
    {"fp32", 8, 23, Specials::InfNan, true},          {"tf32", 8, 10, Specials::InfNan, true},
    {"bf16", 8, 7, Specials::InfNan, true},           {"fp16", 5, 10, Specials::InfNan, true},
    {"fp64", 11, 52, Specials::InfNan, true},         {"fp8_e5m2", 5, 2, Specials::InfNan, false},
    {"fp8_e4m3", 4, 3, Specials::NanOnly, true},      {"fp6_e3m2", 3, 2, Specials::FiniteOnly, true},
    {"fp6_e2m3", 2, 3, Specials::FiniteOnly, true},   {"fp4_e2m1", 2, 1, Specials::FiniteOnly, true},
};

[[noreturn]] void fail(std::string_view spec, std::string_view token, std::string_view why) {
  throw FormatError(fmt::format("bad format '{}': '{}' {}", spec, token, why));
}

// Reads a decimal number at s[pos..]; returns -1 if there is none.
long read_number(std::string_view s, size_t& pos) {
  size_t start = pos;
  long value = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
    value = value * 10 + (s[pos] - '0');
    if (value > 100000) value = 100000;  // far out of every range; keeps the error message sane
    ++pos;
  }
  return pos == start ? -1 : value;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Parses "<a>" or "<a>_<b>" after `prefix`; false if the token does not have that shape.
bool parse_numbers(std::string_view token, std::string_view prefix, bool second, long* a, long* b) {
  if (!starts_with(token, prefix)) return false;
  size_t pos = prefix.size();
  *a = read_number(token, pos);
  if (*a < 0) return false;
  if (second) {
    if (pos >= token.size() || token[pos] != '_') return false;
    ++pos;
    *b = read_number(token, pos);
    if (*b < 0) return false;
  }
  return pos == token.size();
}

// Whether every posit<n>_<es> value is a value of the IEEE-like binary format
// with `precision` significand bits and normal exponents emin..emax (subnormals
// on); otherwise *why says which values do not fit.
bool posit_fits(int n, int es, int precision, int emin, int emax, std::string* why) {
  for (int regime = -(n - 2); regime <= n - 2; ++regime) {
    int regime_len = regime >= 0 ? regime + 2 : -regime + 1;
    if (regime_len > n - 1) regime_len = n - 1;
    int left = n - 1 - regime_len;
    int exp_bits = left < es ? left : es;
    int frac_bits = left > es ? left - es : 0;
    int lowest = regime * (1 << es);
    int highest = lowest + (((1 << exp_bits) - 1) << (es - exp_bits));
    if (highest > emax) {
      *why = fmt::format("its maxpos 2^{} is beyond the largest binade 2^{}", highest, emax);
      return false;
    }
    if (frac_bits > precision - 1) {
      *why = fmt::format("it has {} fraction bits, more than the {} of the target", frac_bits,
                         precision - 1);
      return false;
    }
    if (lowest < emin && lowest - frac_bits < emin - (precision - 1)) {
      *why = fmt::format("its values near 2^{} need bits below the smallest subnormal 2^{}",
                         lowest, emin - (precision - 1));
      return false;
    }
  }
  return true;
}

Format parse_base(std::string_view spec, std::string_view token) {
  Format f;
  long a = 0, b = 0;
  for (const Alias& alias : kAliases) {
    if (token == alias.name) {
      f.family = Family::Ieee;
      f.exp_bits = alias.exp_bits;
      f.man_bits = alias.man_bits;
      f.specials = alias.specials;
      f.saturate = alias.specials == Specials::FiniteOnly;
      return f;
    }
  }
  if (token.size() > 1 && token[0] == 'e' && std::isdigit(static_cast<unsigned char>(token[1]))) {
    size_t pos = 1;
    a = read_number(token, pos);
    if (pos >= token.size() || token[pos] != 'm') fail(spec, token, "is not eXmY (e.g. e5m2)");
    ++pos;
    b = read_number(token, pos);
    if (b < 0 || pos != token.size()) fail(spec, token, "is not eXmY (e.g. e5m2)");
    if (a < 1 || a > 11) fail(spec, token, "has an exponent width outside 1..8 (1..11 for accumulators)");
    if (b > 52) fail(spec, token, "has a fraction width outside 0..23 (0..52 for accumulators)");
    f.family = Family::Ieee;
    f.exp_bits = static_cast<int>(a);
    f.man_bits = static_cast<int>(b);
    return f;
  }
  if (parse_numbers(token, "posit", true, &a, &b)) {
    if (a < 2 || a > 64) fail(spec, token, "has a width outside 2..64");
    if (b > 6) fail(spec, token, "has an exponent size es outside 0..6");
    f.family = Family::Posit;
    f.nbits = static_cast<int>(a);
    f.es = static_cast<int>(b);
    f.saturate = true;
    return f;
  }
  bool is_int = parse_numbers(token, "int", false, &a, &b);
  if (is_int) b = 0;
  if (is_int || parse_numbers(token, "fixed", true, &a, &b)) {
    if (a < 2 || a > 53) fail(spec, token, "has a width outside 2..24 (2..53 for accumulators)");
    if (b > 64) fail(spec, token, "has fraction bits outside 0..64");
    f.family = Family::Fixed;
    f.nbits = static_cast<int>(a);
    f.frac_bits = static_cast<int>(b);
    f.saturate = true;
    return f;
  }
  fail(spec, token, fmt::format("is not a format name; allowed: {}", kBases));
}

void apply_modifier(std::string_view spec, std::string_view token, Format& f, bool& rounding_set,
                    bool& sat_set, bool& wrap_set) {
  struct Mode {
    const char* name;
    Rounding mode;
  };
  static constexpr Mode kModes[] = {{"rne", Rounding::NearestEven}, {"rtz", Rounding::TowardZero},
                                    {"rup", Rounding::Up},          {"rdn", Rounding::Down},
                                    {"rna", Rounding::NearestAway}, {"sr", Rounding::Stochastic}};
  for (const Mode& m : kModes) {
    if (token == m.name) {
      if (rounding_set && f.rounding != m.mode)
        fail(spec, token, "contradicts the rounding mode given before it");
      f.rounding = m.mode;
      rounding_set = true;
      return;
    }
  }
  if (token == "nosub") {
    if (f.family != Family::Ieee) fail(spec, token, "applies to eXmY formats only (posits and fixed point have no subnormals)");
    f.subnormals = false;
    return;
  }
  if (token == "sat") {
    if (f.family == Family::Posit) fail(spec, token, "does not apply: posits always saturate");
    if (wrap_set) fail(spec, token, "contradicts ':wrap'");
    f.saturate = true;
    sat_set = true;
    return;
  }
  if (token == "wrap") {
    if (f.family != Family::Fixed) fail(spec, token, "applies to fixed point only");
    if (sat_set) fail(spec, token, "contradicts ':sat'");
    f.saturate = false;
    wrap_set = true;
    return;
  }
  fail(spec, token, fmt::format("is not a modifier; allowed: {}", kModifiers));
}

}  // namespace

void finalize_format(Format& f) {
  switch (f.family) {
    case Family::Ieee: {
      f.nbits = 1 + f.exp_bits + f.man_bits;
      f.bias = (1 << (f.exp_bits - 1)) - 1;
      f.emin = 1 - f.bias;
      const uint64_t top = (1ull << f.exp_bits) - 1, man_all = (1ull << f.man_bits) - 1;
      uint64_t largest = 0;
      switch (f.specials) {
        case Specials::InfNan: largest = ((top - 1) << f.man_bits) | man_all; break;
        case Specials::NanOnly: largest = (top << f.man_bits) | (man_all - 1); break;
        case Specials::FiniteOnly: largest = (top << f.man_bits) | man_all; break;
      }
      Format with_sub = f;
      with_sub.subnormals = true;
      f.max_finite = ieee_decode(with_sub, largest);
      f.min_normal = pow2_scale(1, f.emin);
      f.min_positive = f.subnormals ? pow2_scale(1, f.emin - f.man_bits) : f.min_normal;
      f.accumulator_only = f.exp_bits > 8 || f.man_bits > 23;
      break;
    }
    case Family::Posit: {
      int scale = (f.nbits - 2) * (1 << f.es);
      f.max_finite = pow2_scale(1, scale);
      f.min_positive = f.min_normal = pow2_scale(1, -scale);
      std::string why;
      f.accumulator_only = !posit_fits(f.nbits, f.es, 24, -126, 127, &why);
      break;
    }
    case Family::Fixed: {
      f.max_finite = fixed_value(f, fixed_max_int(f));
      f.min_positive = f.min_normal = pow2_scale(1, -f.frac_bits);
      f.accumulator_only = f.nbits > 24;
      break;
    }
  }
}

Format parse_format(std::string_view spec) {
  std::vector<std::string_view> tokens;
  size_t start = 0;
  while (true) {
    size_t colon = spec.find(':', start);
    tokens.push_back(spec.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (tokens[0].empty()) fail(spec, tokens[0], fmt::format("is empty; a format is one of: {}", kBases));
  Format f = parse_base(spec, tokens[0]);
  bool rounding_set = false, sat_set = false, wrap_set = false;
  for (size_t i = 1; i < tokens.size(); ++i) {
    if (tokens[i].empty()) fail(spec, tokens[i], fmt::format("is an empty modifier; allowed: {}", kModifiers));
    apply_modifier(spec, tokens[i], f, rounding_set, sat_set, wrap_set);
  }
  if (f.family == Family::Ieee && f.specials == Specials::FiniteOnly) f.saturate = true;
  if (f.family == Family::Posit) {
    std::string why;
    if (!posit_fits(f.nbits, f.es, 53, -1022, 1023, &why))
      fail(spec, tokens[0], fmt::format("cannot be emulated: {} (not even binary64 holds it)", why));
  }
  finalize_format(f);
  return f;
}

std::string format_name(const Format& f) {
  std::string name;
  switch (f.family) {
    case Family::Ieee: {
      for (const Alias& alias : kAliases) {
        if (alias.canonical && alias.exp_bits == f.exp_bits && alias.man_bits == f.man_bits &&
            alias.specials == f.specials) {
          name = alias.name;
          break;
        }
      }
      if (name.empty()) name = fmt::format("e{}m{}", f.exp_bits, f.man_bits);
      break;
    }
    case Family::Posit: name = fmt::format("posit{}_{}", f.nbits, f.es); break;
    case Family::Fixed:
      name = f.frac_bits == 0 ? fmt::format("int{}", f.nbits) : fmt::format("fixed{}_{}", f.nbits, f.frac_bits);
      break;
  }
  static constexpr const char* kModeNames[] = {"rne", "rtz", "rup", "rdn", "rna", "sr"};
  if (f.rounding != Rounding::NearestEven) name += fmt::format(":{}", kModeNames[static_cast<int>(f.rounding)]);
  if (f.family == Family::Ieee && !f.subnormals) name += ":nosub";
  if (f.family == Family::Ieee && f.saturate && f.specials != Specials::FiniteOnly) name += ":sat";
  if (f.family == Family::Fixed && !f.saturate) name += ":wrap";
  return name;
}

void require_storage(const Format& f, std::string_view role) {
  if (!f.accumulator_only) return;
  std::string why;
  if (f.family == Family::Posit) posit_fits(f.nbits, f.es, 24, -126, 127, &why);
  else if (f.family == Family::Fixed) why = fmt::format("its {}-bit integers do not all fit binary32's 24-bit significand", f.nbits);
  else why = "its exponent or fraction is wider than binary32's e8m23";
  throw FormatError(fmt::format(
      "format '{}' is accumulator-only: {}; it may only be an accumulator (acc, acc_outer, mul), not {}",
      format_name(f), why, role));
}

std::string format_grammar_help() {
  return fmt::format("FORMAT[:MODIFIER...] with FORMAT one of {} and MODIFIER one of {}", kBases, kModifiers);
}

}  // namespace emu
