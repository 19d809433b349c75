// R_F: rounding into any format, and the arithmetic of docs/contract.md section 3.
//
// These are the entry points the CPU backend, the CUDA kernels, the calculator
// and the tests call. `rand` is one 32-bit Philox draw (numerics/philox.h); it
// is read only by formats with :sr.
#pragma once

#include "numerics/exact_arith.h"
#include "numerics/fixed.h"
#include "numerics/ieee.h"
#include "numerics/posit.h"

namespace emu {

// The exact roundings are out of line on the device (EMU_HD_OUTLINE): every
// kernel's slow path reaches them, its fast path never does.
EMU_HD_OUTLINE double round_exact(const Format& f, const Exact& x, uint32_t rand) {
  switch (f.family) {
    case Family::Ieee:
      return ieee_round(f, x, rand);
    case Family::Posit:
      return posit_round(f, x, rand);
    case Family::Fixed:
      return fixed_round(f, x, rand);
  }
  return quiet_nan();
}

// R_F(v) for a binary64 value v (any value, not only binary32 ones). Out of line
// on the device too: its callers pass a value, not an Exact in memory.
EMU_HD_OUTLINE double round_value(const Format& f, double v, uint32_t rand = 0) {
  return round_exact(f, exact_from_double(v), rand);
}

// R_F(x) for a binary32 x into a storage format (values are binary32 values).
EMU_HD float quantize(const Format& f, float x, uint32_t rand = 0) {
  return static_cast<float>(round_value(f, static_cast<double>(x), rand));
}

EMU_HD bool round_down_zero(const Format& f) { return f.rounding == Rounding::Down; }

// R_f(a + b) for any binary64 a, b: the accumulate step of a reduction (a is
// the accumulator, b a product or bias) and format_add. For wrapping fixed point
// a huge addend is first reduced modulo an even number of wraps (fixed.h) when
// the other one is below the wrap modulus, which keeps the sign of the sum; so
// the result is exact whenever at most one addend is that large (always, in a
// reduction, whose accumulator is a value of the format).
EMU_HD_OUTLINE double add_into(const Format& f, double a, double b, uint32_t rand = 0) {
  Exact x = exact_from_double(a), y = exact_from_double(b);
  if (f.family == Family::Fixed && !f.saturate && x.kind == Exact::Finite && y.kind == Exact::Finite) {
    const int modulus_log2 = f.nbits - f.frac_bits + 1;
    if (exact_log2(y) < modulus_log2)
      x = fixed_wrap_reduce(f, x);
    else if (exact_log2(x) < modulus_log2)
      y = fixed_wrap_reduce(f, y);
  }
  return round_exact(f, exact_add(x, y, round_down_zero(f)), rand);
}

// Correctly rounded arithmetic; operands must be values of f.
EMU_HD double format_add(const Format& f, double a, double b, uint32_t rand = 0) {
  return add_into(f, a, b, rand);
}
EMU_HD double format_sub(const Format& f, double a, double b, uint32_t rand = 0) {
  return add_into(f, a, -b, rand);
}
EMU_HD_OUTLINE double format_mul(const Format& f, double a, double b, uint32_t rand = 0) {
  return round_exact(f, exact_mul(a, b), rand);
}
EMU_HD_OUTLINE double format_div(const Format& f, double a, double b, uint32_t rand = 0) {
  return round_exact(f, exact_div(a, b), rand);
}
EMU_HD_OUTLINE double format_sqrt(const Format& f, double a, uint32_t rand = 0) {
  return round_exact(f, exact_sqrt(a), rand);
}

// Code bits <-> values.
EMU_HD double decode(const Format& f, uint64_t code) {
  switch (f.family) {
    case Family::Ieee:
      return ieee_decode(f, code);
    case Family::Posit:
      return posit_decode(f, code);
    case Family::Fixed:
      return fixed_decode(f, code);
  }
  return quiet_nan();
}
// False when v is not a value of f or has no code (NaN in a format without one).
EMU_HD bool encode(const Format& f, double v, uint64_t* code) {
  switch (f.family) {
    case Family::Ieee:
      return ieee_encode(f, v, code);
    case Family::Posit:
      return posit_encode(f, v, code);
    case Family::Fixed:
      return fixed_encode(f, v, code);
  }
  return false;
}

}  // namespace emu
