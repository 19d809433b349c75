// The properties of a format, for people: `emutrain calc FORMAT info`, docs and
// error messages. Host only; computed from the Format and the numerics
// functions themselves (decode), so the numbers cannot drift from what the
// emulation does.
//
//   describe_format(parse_format("e5m2")) -> {max_finite 57344, min_normal 2^-14, ...}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numerics/format.h"

namespace emu {

struct FormatInfo {
  std::string name;  // canonical spec (format_name)
  std::string
      family;  // "IEEE-like", "OCP fn (no Inf)", "OCP MX element (finite only)", "posit", "fixed point"
  std::string layout;  // the fields of a code, e.g. "1 sign, 4 exponent (bias 7), 3 fraction"
  int width = 0;       // bits in a code

  double max_finite = 0;     // largest finite value
  double lowest = 0;         // most negative finite value (-max_finite except fixed point)
  double min_normal = 0;     // Ieee: 2^emin. Posit: minpos. Fixed: 2^-f
  double min_subnormal = 0;  // smallest positive subnormal; 0 when there are none
  double min_positive = 0;   // smallest positive value
  double epsilon = 0;  // Ieee: 2^-man_bits. Posit: (next posit above 1) - 1, 0 if 1 is maxpos. Fixed: 2^-f

  // Code counts; together they make 2^width.
  uint64_t finite_codes = 0;  // including zeros
  uint64_t zero_codes = 0;    // codes that read as a zero (both signs; :nosub subnormal codes not included)
  uint64_t nan_codes = 0;     // NaN, or NaR for posits
  uint64_t inf_codes = 0;

  bool accumulator_only = false;
  std::string accumulator_reason;  // require_storage's message when accumulator_only

  std::vector<std::string> specials;  // special-value rules in words, one sentence each
  std::string rounding;               // the rounding mode in words, e.g. "rne: to nearest, ties to even"
};

FormatInfo describe_format(const Format& f);

}  // namespace emu
