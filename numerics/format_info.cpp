#include "numerics/format_info.h"

#include <fmt/format.h>

#include "numerics/format_spec.h"
#include "numerics/round.h"

namespace emu {
namespace {

std::string rounding_words(Rounding r) {
  switch (r) {
    case Rounding::NearestEven:
      return "rne: to nearest, ties to even";
    case Rounding::TowardZero:
      return "rtz: toward zero";
    case Rounding::Up:
      return "rup: toward +Inf";
    case Rounding::Down:
      return "rdn: toward -Inf";
    case Rounding::NearestAway:
      return "rna: to nearest, ties away from zero";
    case Rounding::Stochastic:
      return "sr: stochastic, away from zero with probability (cut-off part) / unit, "
             "from one 32-bit Philox draw per rounding";
  }
  return "?";
}

// Half of 2^width minus the given even counts, doubled, so that width 64 does not overflow.
uint64_t rest_of_codes(int width, uint64_t taken) { return ((1ull << (width - 1)) - taken / 2) * 2; }

void describe_ieee(const Format& f, FormatInfo& info) {
  const int m = f.man_bits;
  info.layout = fmt::format("1 sign, {} exponent (bias {}), {} fraction", f.exp_bits, f.bias, m);
  info.lowest = -f.max_finite;
  info.min_normal = f.min_normal;
  info.min_subnormal = f.subnormals && m > 0 ? pow2_scale(1, f.emin - m) : 0.0;
  info.epsilon = pow2_scale(1, -m);
  info.zero_codes = 2;
  auto& s = info.specials;
  switch (f.specials) {
    case Specials::InfNan:
      info.family = "IEEE-like";
      info.inf_codes = 2;
      info.nan_codes = 2 * ((1ull << m) - 1);
      if (m > 0) {
        s.push_back("exponent all ones: Inf (fraction 0) or NaN (fraction != 0)");
      } else {
        s.push_back(
            "exponent all ones: Inf; there is no NaN code (a NaN result stays a binary32 NaN "
            "but cannot be encoded)");
      }
      if (f.saturate) {
        s.push_back("overflow and +-Inf inputs give +-max finite (:sat)");
      } else {
        s.push_back(
            "overflow gives +-Inf as IEEE 754 does: +-max finite in modes that round toward "
            "zero for that sign (rtz; rup for negatives, rdn for positives)");
      }
      s.push_back("NaN in gives NaN out (encoded as the positive quiet NaN)");
      break;
    case Specials::NanOnly:
      info.family = "IEEE-like, OCP fn (no Inf)";
      info.nan_codes = 2;
      s.push_back("no Inf; only S.1..1.1..1 is NaN (both signs)");
      if (f.saturate) {
        s.push_back("overflow and +-Inf inputs give +-max finite (:sat)");
      } else {
        s.push_back(
            "overflow and +-Inf inputs give NaN where IEEE gives Inf, +-max finite where IEEE "
            "gives max finite (modes toward zero for that sign)");
      }
      s.push_back("NaN in gives NaN out");
      break;
    case Specials::FiniteOnly:
      info.family = "IEEE-like, OCP MX element (finite only)";
      s.push_back("every code is finite: no Inf, no NaN");
      s.push_back("overflow and +-Inf inputs saturate to +-max finite");
      s.push_back("a NaN input stays a binary32 NaN (so divergence stays visible) but has no code");
      break;
  }
  s.push_back("two zeros, +0 and -0, with IEEE 754 sign rules (x + (-x) = +0, -0 under rdn)");
  if (f.subnormals) {
    s.push_back(m > 0 ? "subnormals: gradual underflow below min normal"
                      : "no subnormals (no fraction bits); below min normal values round to 0 or min normal");
  } else {
    s.push_back(
        "no subnormals (:nosub): results are rounded on the subnormal grid, then flushed to a "
        "zero of the same sign if below min normal; subnormal codes read as zero");
  }
  info.finite_codes = rest_of_codes(info.width, info.inf_codes + info.nan_codes);
}

void describe_posit(const Format& f, FormatInfo& info) {
  info.family = "posit";
  info.layout = fmt::format(
      "1 sign, regime (run of equal bits + terminator), up to {} exponent bits, fraction; negatives "
      "are the two's complement",
      f.es);
  info.lowest = -f.max_finite;
  info.min_normal = f.min_positive;  // minpos; posits have no subnormals
  const uint64_t one = 1ull << (f.nbits - 2);
  const uint64_t nar = posit_nar(f.nbits);
  info.epsilon = one + 1 < nar ? posit_decode(f, one + 1) - 1.0 : 0.0;
  info.zero_codes = 1;
  info.nan_codes = 1;  // NaR
  info.finite_codes = rest_of_codes(info.width, 2) + 1;
  auto& s = info.specials;
  s.push_back(fmt::format("one zero (code 0) and one NaR (code 0x{:x}); no Inf, no -0", nar));
  s.push_back("NaN, +-Inf and x/0 give NaR; NaR in gives NaR out");
  s.push_back("nonzero values never round to 0 or past +-maxpos: they saturate at +-minpos / +-maxpos");
  s.push_back(
      "rounding works on the encoding (Posit Standard 2022): round to nearest breaks ties by "
      "the (n+1)-th bit of the exact value's posit bit string");
  s.push_back("no subnormals; :nosub, :sat and :wrap do not apply");
}

void describe_fixed(const Format& f, FormatInfo& info) {
  info.family = "fixed point";
  info.layout = fmt::format("{}-bit two's complement integer I, value I * 2^-{}", f.nbits, f.frac_bits);
  info.lowest = fixed_value(f, fixed_min_int(f));
  info.min_normal = f.min_positive;
  info.epsilon = f.min_positive;
  info.zero_codes = 1;
  info.finite_codes = rest_of_codes(info.width, 0);
  auto& s = info.specials;
  s.push_back("every code is finite: no NaN, no Inf, one zero (no -0)");
  if (f.saturate) {
    s.push_back("overflow saturates at the lowest / max finite value");
  } else {
    s.push_back("overflow wraps around: the rounded integer is taken modulo 2^width (:wrap)");
  }
  s.push_back("NaN reads as 0; +-Inf saturates (even under :wrap), as PTX cvt does");
}

}  // namespace

FormatInfo describe_format(const Format& f) {
  FormatInfo info;
  info.name = format_name(f);
  info.width = f.nbits;
  info.max_finite = f.max_finite;
  info.min_positive = f.min_positive;
  info.rounding = rounding_words(f.rounding);
  info.accumulator_only = f.accumulator_only;
  if (f.accumulator_only) {
    try {
      require_storage(f, "a tensor value");
    } catch (const FormatError& e) {
      info.accumulator_reason = e.what();
    }
  }
  switch (f.family) {
    case Family::Ieee:
      describe_ieee(f, info);
      break;
    case Family::Posit:
      describe_posit(f, info);
      break;
    case Family::Fixed:
      describe_fixed(f, info);
      break;
  }
  return info;
}

}  // namespace emu
