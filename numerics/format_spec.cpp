#include "numerics/format_spec.h"

#include <fmt/format.h>

#include <cctype>
#include <utility>
#include <vector>

#include "numerics/printable.h"
#include "numerics/round.h"

namespace emu {
namespace {

constexpr const char* kModifiers = "rne, rtz, rup, rdn, rna, sr, nosub, sat, wrap";
constexpr const char* kBases =
    "eXmY (X 1..8, Y 0..23; accumulators up to e11m52), fp32, tf32, bf16, fp16, fp64, fp8_e5m2, "
    "fp8_e4m3, fp6_e3m2, fp6_e2m3, fp4_e2m1, posit<n>_<es>, fixed<w>_<f>, int<w>; block formats (reads "
    "only): "
    "bfp<m>_b<B> (m 1..23, B 1..65536), mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4, mxint8, "
    "nvfp4, "
    "afp<X>m<Y> (X 1..8, Y 0..23)";

struct Alias {
  const char* name;
  int exp_bits, man_bits;
  Specials specials;
  bool canonical;  // printed by format_name (fp8_e5m2 is plain e5m2)
};
constexpr Alias kAliases[] = {
    {"fp32", 8, 23, Specials::InfNan, true},        {"tf32", 8, 10, Specials::InfNan, true},
    {"bf16", 8, 7, Specials::InfNan, true},         {"fp16", 5, 10, Specials::InfNan, true},
    {"fp64", 11, 52, Specials::InfNan, true},       {"fp8_e5m2", 5, 2, Specials::InfNan, false},
    {"fp8_e4m3", 4, 3, Specials::NanOnly, true},    {"fp6_e3m2", 3, 2, Specials::FiniteOnly, true},
    {"fp6_e2m3", 2, 3, Specials::FiniteOnly, true}, {"fp4_e2m1", 2, 1, Specials::FiniteOnly, true},
};

// The named block formats (docs/block_formats.md): OCP MX v1.0 and NVFP4.
struct BlockAlias {
  const char* name;
  BlockKind kind;
  int size;
  Family elem_family;
  int a, b;  // Ieee: exponent, fraction bits. Fixed: width, fraction bits
  Specials specials;
};
constexpr BlockAlias kBlockAliases[] = {
    {"mxfp8_e4m3", BlockKind::Mx, 32, Family::Ieee, 4, 3, Specials::NanOnly},
    {"mxfp8_e5m2", BlockKind::Mx, 32, Family::Ieee, 5, 2, Specials::InfNan},
    {"mxfp6_e3m2", BlockKind::Mx, 32, Family::Ieee, 3, 2, Specials::FiniteOnly},
    {"mxfp6_e2m3", BlockKind::Mx, 32, Family::Ieee, 2, 3, Specials::FiniteOnly},
    {"mxfp4", BlockKind::Mx, 32, Family::Ieee, 2, 1, Specials::FiniteOnly},
    {"mxint8", BlockKind::Mx, 32, Family::Fixed, 8, 6, Specials::FiniteOnly},
    {"nvfp4", BlockKind::Nvfp4, 16, Family::Ieee, 2, 1, Specials::FiniteOnly},
};

[[noreturn]] void fail(std::string_view spec, std::string_view token, std::string_view why) {
  throw FormatError(fmt::format("bad format '{}': '{}' {}", printable(spec), printable(token), why));
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

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

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
      *why = fmt::format("it has {} fraction bits, more than the {} of the target", frac_bits, precision - 1);
      return false;
    }
    if (lowest < emin && lowest - frac_bits < emin - (precision - 1)) {
      *why = fmt::format("its values near 2^{} need bits below the smallest subnormal 2^{}", lowest,
                         emin - (precision - 1));
      return false;
    }
  }
  return true;
}

// A block format's base token, or false. The Format's scalar fields stay fp32's
// (the carrier, format.h); the element format goes into f.block.
bool parse_block(std::string_view spec, std::string_view token, Format& f);

Format parse_base(std::string_view spec, std::string_view token) {
  Format f;
  long a = 0, b = 0;
  if (parse_block(spec, token, f)) return f;
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

bool parse_block(std::string_view spec, std::string_view token, Format& f) {
  BlockSpec& s = f.block;
  for (const BlockAlias& alias : kBlockAliases) {
    if (token == alias.name) {
      s.kind = alias.kind;
      s.size = alias.size;
      s.elem_family = alias.elem_family;
      s.elem_specials = alias.specials;
      if (alias.elem_family == Family::Ieee) {
        s.elem_exp_bits = alias.a;
        s.elem_man_bits = alias.b;
      } else {
        s.elem_nbits = alias.a;
        s.elem_frac_bits = alias.b;
      }
      return true;
    }
  }
  if (starts_with(token, "bfp")) {
    size_t pos = 3;
    long m = read_number(token, pos);
    if (m < 0 || token.substr(pos, 2) != "_b") fail(spec, token, "is not bfp<m>_b<B> (e.g. bfp8_b16)");
    pos += 2;
    long size = read_number(token, pos);
    if (size < 0 || pos != token.size()) fail(spec, token, "is not bfp<m>_b<B> (e.g. bfp8_b16)");
    if (m < 1 || m > 23) fail(spec, token, "has a magnitude width m outside 1..23");
    if (size < 1 || size > 65536) fail(spec, token, "has a block size B outside 1..65536");
    s.kind = BlockKind::Bfp;
    s.size = static_cast<int>(size);
    s.elem_family = Family::Fixed;
    s.elem_sign_magnitude = true;
    s.elem_nbits = static_cast<int>(m) + 1;
    s.elem_frac_bits = static_cast<int>(m) - 1;
    return true;
  }
  if (starts_with(token, "afp")) {
    size_t pos = 3;
    long x = read_number(token, pos);
    if (x < 0 || pos >= token.size() || token[pos] != 'm')
      fail(spec, token, "is not afp<X>m<Y> (e.g. afp4m3)");
    ++pos;
    long y = read_number(token, pos);
    if (y < 0 || pos != token.size()) fail(spec, token, "is not afp<X>m<Y> (e.g. afp4m3)");
    if (x < 1 || x > 8) fail(spec, token, "has an exponent width X outside 1..8");
    if (y > 23) fail(spec, token, "has a fraction width Y outside 0..23");
    s.kind = BlockKind::Afp;
    s.size = 0;
    s.elem_family = Family::Ieee;
    s.elem_specials = Specials::FiniteOnly;
    s.elem_subnormals = false;
    s.elem_exp_bits = static_cast<int>(x);
    s.elem_man_bits = static_cast<int>(y);
    return true;
  }
  return false;
}

// Modifiers of a block format: a rounding mode (of the elements) and :nosub
// (IEEE-like elements of MX / nvfp4); elements always saturate.
void apply_block_modifier(std::string_view spec, std::string_view token, Format& f, bool& rounding_set) {
  static constexpr std::pair<const char*, Rounding> kModes[] = {
      {"rne", Rounding::NearestEven}, {"rtz", Rounding::TowardZero},  {"rup", Rounding::Up},
      {"rdn", Rounding::Down},        {"rna", Rounding::NearestAway}, {"sr", Rounding::Stochastic}};
  for (const auto& m : kModes) {
    if (token == m.first) {
      if (rounding_set && f.block.elem_rounding != m.second)
        fail(spec, token, "contradicts the rounding mode given before it");
      f.block.elem_rounding = m.second;
      rounding_set = true;
      return;
    }
  }
  if (token == "nosub") {
    if (f.block.elem_family != Family::Ieee || f.block.kind == BlockKind::Afp)
      fail(spec, token,
           "applies to the floating-point elements of mxfp*/nvfp4 only (afp has no subnormals anyway)");
    f.block.elem_subnormals = false;
    return;
  }
  if (token == "sat") fail(spec, token, "does not apply: block format elements always saturate");
  if (token == "wrap") fail(spec, token, "does not apply to block formats");
  fail(spec, token, "is not a block format modifier; allowed: rne, rtz, rup, rdn, rna, sr, nosub");
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
    if (f.family != Family::Ieee)
      fail(spec, token, "applies to eXmY formats only (posits and fixed point have no subnormals)");
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
        case Specials::InfNan:
          largest = ((top - 1) << f.man_bits) | man_all;
          break;
        case Specials::NanOnly:
          largest = (top << f.man_bits) | (man_all - 1);
          break;
        case Specials::FiniteOnly:
          largest = (top << f.man_bits) | man_all;
          break;
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
    if (tokens[i].empty())
      fail(spec, tokens[i], fmt::format("is an empty modifier; allowed: {}", kModifiers));
    if (is_block(f)) {
      apply_block_modifier(spec, tokens[i], f, rounding_set);
      continue;
    }
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

namespace {
std::string block_name(const Format& f) {
  const BlockSpec& b = f.block;
  std::string name;
  switch (b.kind) {
    case BlockKind::Bfp:
      name = fmt::format("bfp{}_b{}", b.elem_nbits - 1, b.size);
      break;
    case BlockKind::Afp:
      name = fmt::format("afp{}m{}", b.elem_exp_bits, b.elem_man_bits);
      break;
    default:
      for (const BlockAlias& alias : kBlockAliases) {
        const int x = alias.elem_family == Family::Ieee ? b.elem_exp_bits : b.elem_nbits;
        const int y = alias.elem_family == Family::Ieee ? b.elem_man_bits : b.elem_frac_bits;
        if (alias.kind == b.kind && alias.size == b.size && alias.elem_family == b.elem_family &&
            alias.a == x && alias.b == y && alias.specials == b.elem_specials) {
          name = alias.name;
          break;
        }
      }
      if (name.empty()) name = "block?";
  }
  static constexpr const char* kModeNames[] = {"rne", "rtz", "rup", "rdn", "rna", "sr"};
  if (b.elem_rounding != Rounding::NearestEven)
    name += fmt::format(":{}", kModeNames[static_cast<int>(b.elem_rounding)]);
  if (!b.elem_subnormals && b.kind != BlockKind::Afp) name += ":nosub";
  return name;
}
}  // namespace

std::string format_name(const Format& f) {
  if (is_block(f)) return block_name(f);
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
    case Family::Posit:
      name = fmt::format("posit{}_{}", f.nbits, f.es);
      break;
    case Family::Fixed:
      name =
          f.frac_bits == 0 ? fmt::format("int{}", f.nbits) : fmt::format("fixed{}_{}", f.nbits, f.frac_bits);
      break;
  }
  static constexpr const char* kModeNames[] = {"rne", "rtz", "rup", "rdn", "rna", "sr"};
  if (f.rounding != Rounding::NearestEven)
    name += fmt::format(":{}", kModeNames[static_cast<int>(f.rounding)]);
  if (f.family == Family::Ieee && !f.subnormals) name += ":nosub";
  if (f.family == Family::Ieee && f.saturate && f.specials != Specials::FiniteOnly) name += ":sat";
  if (f.family == Family::Fixed && !f.saturate) name += ":wrap";
  return name;
}

void require_element_format(const Format& f, std::string_view role) {
  if (!is_block(f)) return;
  throw FormatError(fmt::format(
      "format '{}' is a block format: block formats are read formats only (weights, activations, grads), "
      "not {}; use its element format (e.g. fp8_e4m3) or fp32 there",
      format_name(f), role));
}

void require_storage(const Format& f, std::string_view role) {
  if (!f.accumulator_only) return;
  std::string why;
  if (f.family == Family::Posit)
    posit_fits(f.nbits, f.es, 24, -126, 127, &why);
  else if (f.family == Family::Fixed)
    why = fmt::format("its {}-bit integers do not all fit binary32's 24-bit significand", f.nbits);
  else
    why = "its exponent or fraction is wider than binary32's e8m23";
  throw FormatError(fmt::format(
      "format '{}' is accumulator-only: {}; it may only be an accumulator (acc, acc_outer, mul), not {}",
      format_name(f), why, role));
}

std::string format_grammar_help() {
  return fmt::format("FORMAT[:MODIFIER...] with FORMAT one of {} and MODIFIER one of {}", kBases, kModifiers);
}

}  // namespace emu
