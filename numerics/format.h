// A number format as run-time data: one struct for every family, parsed from a
// spec string (format_spec.h), passed by value into CPU loops and CUDA kernels.
//
// Formats are never template parameters: one binary serves any recipe, and the
// number of CUDA kernel instantiations stays small (one per kernel, not one per
// format: compile time and binary size do not grow with the formats offered).
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
  Stochastic,   // :sr, see docs/contract.md section 2.4
};

// What the top exponent of an IEEE-like format holds.
enum class Specials : uint8_t {
  InfNan,      // IEEE: exponent all ones = Inf (fraction 0) or NaN
  NanOnly,     // OCP "fn" (fp8_e4m3): no Inf, only S.1..1.1..1 is NaN
  FiniteOnly,  // OCP MX element types (fp6, fp4): every code is finite
};

// Block formats (docs/block_formats.md): each element is rounded against
// metadata shared by its block (a shared exponent, a scale, a bias), so rounding
// into one needs the whole block (numerics/block_format.h) and is only defined
// for reads of a whole tensor (read_as with a ReadLayout).
enum class BlockKind : uint8_t {
  None,   // a scalar format
  Bfp,    // bfp<m>_b<B>: sign + m-bit magnitude elements, shared exponent (E8M0 code) per B
  Mx,     // OCP MX v1.0: mxfp8/6/4 and mxint8, E8M0 scale per 32 elements
  Nvfp4,  // NVIDIA NVFP4: e2m1 elements, unsigned e4m3 scale per 16 elements
  Afp,    // AdaptivFloat afp<X>m<Y>: one exponent bias for the whole tensor (E8M0 code of the shift)
};

// The block descriptor of a Format. The element format is described by the
// elem_* fields (Format fields of the same names); block_element()
// (numerics/block_format.h) builds it as a Format.
struct BlockSpec {
  BlockKind kind = BlockKind::None;
  int size = 0;                       // elements per block along a row; 0: the whole tensor (Afp)
  Family elem_family = Family::Ieee;  // Ieee (mxfp*, nvfp4, afp) or Fixed (mxint8, bfp)
  Specials elem_specials = Specials::FiniteOnly;
  Rounding elem_rounding = Rounding::NearestEven;  // the spec's rounding modifier applies here
  bool elem_subnormals = true;
  bool elem_sign_magnitude = false;  // Fixed elements coded sign + magnitude (bfp), not two's complement
  int elem_exp_bits = 0;             // Ieee elements
  int elem_man_bits = 0;
  int elem_nbits = 0;      // Fixed elements: width of the code
  int elem_frac_bits = 0;  // Fixed elements: value = integer * 2^-elem_frac_bits
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
  int bias = 127;                      // Ieee exponent bias
  int emin = -126;                     // Ieee: exponent of the smallest normal binade (1 - bias)
  double max_finite = 0x1.fffffep127;  // largest finite value
  double min_positive = 0x1p-149;      // smallest positive value (subnormal where there are subnormals)
  double min_normal = 0x1p-126;        // Ieee: 2^emin; Posit/Fixed: equal to min_positive

  // Block formats only (block.kind != None). All the fields above are then those
  // of plain fp32 (the carrier): where a per-element format is needed (an
  // element-wise result rounded to a block grads format), a block format acts
  // as fp32, and only whole-tensor reads quantize per block.
  BlockSpec block;
};

// Equal formats: every field equal, the derived constants and the block descriptor included (a
// block format is never equal to its binary32 carrier). Parsed specs that alias each other
// ("fp16", "e5m10") give equal formats.
EMU_HD bool operator==(const BlockSpec& a, const BlockSpec& b) {
  return a.kind == b.kind && a.size == b.size && a.elem_family == b.elem_family &&
         a.elem_specials == b.elem_specials && a.elem_rounding == b.elem_rounding &&
         a.elem_subnormals == b.elem_subnormals && a.elem_sign_magnitude == b.elem_sign_magnitude &&
         a.elem_exp_bits == b.elem_exp_bits && a.elem_man_bits == b.elem_man_bits &&
         a.elem_nbits == b.elem_nbits && a.elem_frac_bits == b.elem_frac_bits;
}
EMU_HD bool operator!=(const BlockSpec& a, const BlockSpec& b) { return !(a == b); }

EMU_HD bool operator==(const Format& a, const Format& b) {
  return a.family == b.family && a.rounding == b.rounding && a.specials == b.specials &&
         a.subnormals == b.subnormals && a.saturate == b.saturate &&
         a.accumulator_only == b.accumulator_only && a.exp_bits == b.exp_bits && a.man_bits == b.man_bits &&
         a.nbits == b.nbits && a.es == b.es && a.frac_bits == b.frac_bits && a.bias == b.bias &&
         a.emin == b.emin && a.max_finite == b.max_finite && a.min_positive == b.min_positive &&
         a.min_normal == b.min_normal && a.block == b.block;
}
EMU_HD bool operator!=(const Format& a, const Format& b) { return !(a == b); }

EMU_HD bool is_block(const Format& f) { return f.block.kind != BlockKind::None; }

EMU_HD bool is_stochastic(const Format& f) { return f.rounding == Rounding::Stochastic; }

// Plain fp32: binary32 with round-to-nearest-even, subnormals, Inf and NaN.
// R_f is then the identity on binary32 values and one native float operation is
// exactly R_f of the exact result, so kernels may take their native fast paths.
EMU_HD bool is_plain_fp32(const Format& f) {
  return f.family == Family::Ieee && f.exp_bits == 8 && f.man_bits == 23 &&
         f.rounding == Rounding::NearestEven && f.subnormals && !f.saturate &&
         f.specials == Specials::InfNan && f.block.kind == BlockKind::None;
}

}  // namespace emu
