#include "numerics/format_info.h"

#include <fmt/format.h>

#include "numerics/block_format.h"
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

// A block format: the element's properties scaled by the scale's range, and the
// block rules in words (docs/block_formats.md).
void describe_block(const Format& f, FormatInfo& info) {
  const BlockParams p = block_params(f);
  const FormatInfo e = describe_format(p.elem);
  const std::string elem_words = p.sign_magnitude
                                     ? fmt::format("1 sign + {}-bit magnitude (value magnitude * 2^-{})",
                                                   p.elem.nbits - 1, p.elem.frac_bits)
                                     : fmt::format("{} [{}]", e.name, e.layout);
  // Scale range: E8M0 2^-127 .. 2^(127 - emax_elem) for values a binary32 block produces; nvfp4: e4m3 2^-9 ..
  // 448.
  double scale_min = 0x1p-127, scale_max = pow2_scale(1, 127 - p.emax_elem);
  std::string scale_words = "8-bit E8M0 scale 2^(code - 127) (code 0xFF = NaN)";
  switch (p.kind) {
    case BlockKind::Mx:
      info.family = "block format, OCP MX v1.0";
      break;
    case BlockKind::Bfp:
      info.family = "block format, block floating point";
      scale_words = "8-bit shared exponent, coded as an E8M0 scale 2^(code - 127) (code 0xFF = NaN)";
      break;
    case BlockKind::Nvfp4:
      info.family = "block format, NVIDIA NVFP4";
      scale_words = "e4m3 scale (rne, saturating at 448; 0x7F = NaN)";
      scale_min = 0x1p-9;
      scale_max = 448;
      break;
    case BlockKind::Afp:
      info.family = "block format, AdaptivFloat (per-tensor exponent bias)";
      scale_words = fmt::format(
          "one exponent bias per tensor, bias = {} - s, stored as the E8M0 code s + 127 of the shift 2^s",
          p.elem.bias);
      break;
    case BlockKind::None:
      break;
  }
  const std::string block_words =
      p.block_size > 0 ? fmt::format("blocks of {} elements along each reduction row", p.block_size)
                       : std::string("one block: the whole tensor");
  info.layout = fmt::format("{}: {} + per element {}", block_words, scale_words, elem_words);
  info.width = p.elem.nbits;
  info.max_finite = p.elem.max_finite * scale_max;
  info.lowest = -info.max_finite;
  info.min_normal = e.min_normal * scale_min;
  info.min_subnormal = e.min_subnormal * scale_min;
  info.min_positive = e.min_positive * scale_min;
  info.epsilon = e.epsilon;
  info.finite_codes = e.finite_codes;
  info.zero_codes = e.zero_codes;
  info.nan_codes = e.nan_codes;
  info.inf_codes = e.inf_codes;
  info.rounding = "elements: " + e.rounding;
  auto& s = info.specials;
  s.push_back(
      fmt::format("width is that of an element code; each block adds an {}-bit metadata code", p.meta_bits));
  if (p.kind == BlockKind::Nvfp4)
    s.push_back("scale = R_e4m3(max|x| / 6) per block; a scale that rounds to 0 gives an all-zero block");
  else
    s.push_back(fmt::format(
        "scale 2^s, s = max(-127, floor(log2 max|x|) - {}) per block; an all-zero block has s = -127",
        p.emax_elem));
  s.push_back("elements: R(x / scale) in the element format, saturating at +-" +
              fmt::format("{}", p.elem.max_finite) + (p.elem.family == Family::Fixed ? " (symmetric)" : ""));
  s.push_back("NaN or Inf anywhere in a block: NaN scale code, the whole block reads as NaN");
  s.push_back("only a whole-tensor read rounds into it; where one value is rounded alone it acts as fp32");
}

}  // namespace

FormatInfo describe_format(const Format& f) {
  FormatInfo info;
  if (is_block(f)) {
    info.name = format_name(f);
    describe_block(f, info);
    return info;
  }
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
