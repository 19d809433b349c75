// A number format as run-time data: one struct for every family, parsed from a
// spec string (format_spec.h), passed by value into CPU loops and CUDA kernels.
//
// Formats are never template parameters: one binary serves any recipe, and the
// number of CUDA kernel instantiations stays small (TOOLCHAIN.md).
#pragma once

#include <cstdint>

#include "numerics/hd.h"

namespace emu {

enum class Family : uint8_t {
  Ieee,   // eXmY and its aliases: sign, exponent, fraction
  Posit,  // posit<n>_<es>
  Fixed,  // fixed<w>_<f>, int<w>: two's complement integer times 2^-f
};

enum class Rounding : uint8_t {
  NearestEven,  // :rne (default)
  TowardZero,   // :rtz
  Up,           // :rup, toward +Inf
  Down,         // :rdn, toward -Inf
  NearestAway,  // :rna, ties away from zero
  Stochastic,   // :sr, see docs/numerics.md "Stochastic rounding"
};

// What the top exponent of an IEEE-like format holds.
enum class Specials : uint8_t {
  InfNan,      // IEEE: exponent all ones = Inf (fraction 0) or NaN
  NanOnly,     // OCP "fn" (fp8_e4m3): no Inf, only S.1..1.1..1 is NaN
  FiniteOnly,  // OCP MX element types (fp6, fp4): every code is finite
};

struct Format {
  Family family = Family::Ieee;
  Rounding rounding = Rounding::NearestEven;
  Specials specials = Specials::InfNan;  // Ieee only
  bool subnormals = true;                // false with :nosub (Ieee only)
  bool saturate = false;                 // Ieee: :sat. Fixed: true unless :wrap. Posit: always
  bool accumulator_only = false;         // values are not all binary32 values

  // Field widths. Ieee: exp_bits, man_bits. Posit: nbits, es. Fixed: nbits, frac_bits.
  int exp_bits = 8;
  int man_bits = 23;
  int nbits = 32;  // width of the encoding in bits, for every family
  int es = 0;
  int frac_bits = 0;

  // Derived constants, filled in by finalize_format() (format_spec.cpp). The
  // defaults are those of fp32, so a default-constructed Format is fp32.
  int bias = 127;   // Ieee exponent bias
  int emin = -126;  // Ieee: exponent of the smallest normal binade (1 - bias)
  double max_finite = 0x1.fffffep127;  // largest finite value
  double min_positive = 0x1p-149;      // smallest positive value (subnormal where there are subnormals)
  double min_normal = 0x1p-126;        // Ieee: 2^emin; Posit/Fixed: equal to min_positive
};

EMU_HD bool is_stochastic(const Format& f) { return f.rounding == Rounding::Stochastic; }

// Plain fp32: binary32 with round-to-nearest-even, subnormals, Inf and NaN.
// R_f is then the identity on binary32 values and one native float operation is
// exactly R_f of the exact result, so kernels may take their native fast paths.
EMU_HD bool is_plain_fp32(const Format& f) {
  return f.family == Family::Ieee && f.exp_bits == 8 && f.man_bits == 23 && f.rounding == Rounding::NearestEven &&
         f.subnormals && !f.saturate && f.specials == Specials::InfNan;
}

}  // namespace emu
