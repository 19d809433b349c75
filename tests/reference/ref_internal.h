// Per-family pieces of the reference (ref_ieee.cpp, ref_posit.cpp,
// ref_fixed.cpp) and the one rounding decision they share (ref_round.cpp).
#pragma once

#include <cstdint>

#include "tests/reference/reference.h"

namespace emu::ref::detail {

// Where an inexact magnitude lies relative to the tie point between its two
// neighbours (for IEEE-like and fixed point the arithmetic midpoint; for
// posits the value of the (n+1)-bit code 2c+1).
enum class Half { Below, Tie, Above };

// Whether R moves an inexact magnitude from its lower neighbour to the upper
// one. `lower_odd`: the lower neighbour's last significand / integer / code
// bit is 1 (for ties to even). `below32`: the SR quantity (ref_below32).
bool step_up(Rounding mode, bool negative, Half where, bool lower_odd, uint32_t below32, uint32_t rand);

// floor(2^32 * r) for 0 <= r < 1 (with `tail`, r is just above the rational:
// the floor is the same, since 2^32 r being an integer is then impossible to
// cross from below).
uint32_t fraction_bits32(const Rational& r);

double quiet_nan_value();
double inf_value(bool negative);
double signed_zero(bool negative);
double with_sign(double magnitude, bool negative);

// IEEE-like.
double ieee_decode(const Format& f, uint64_t code);
bool ieee_encode(const Format& f, double v, uint64_t* code);
double ieee_round(const Format& f, const Rational& magnitude, bool negative, bool tail, uint32_t rand);
double ieee_special(const Format& f, RefExact::Kind kind, bool negative);
uint32_t ieee_below32(const Format& f, const Rational& magnitude, bool tail);

// Posits.
double posit_decode(const Format& f, uint64_t code);
bool posit_encode(const Format& f, double v, uint64_t* code);
double posit_round(const Format& f, const Rational& magnitude, bool negative, bool tail, uint32_t rand);
double posit_special(const Format& f, RefExact::Kind kind, bool negative);
uint32_t posit_below32(const Format& f, const Rational& magnitude, bool tail);

// Fixed point.
double fixed_decode(const Format& f, uint64_t code);
bool fixed_encode(const Format& f, double v, uint64_t* code);
double fixed_round(const Format& f, const Rational& magnitude, bool negative, bool tail, uint32_t rand);
double fixed_special(const Format& f, RefExact::Kind kind, bool negative);
uint32_t fixed_below32(const Format& f, const Rational& magnitude, bool tail);

}  // namespace emu::ref::detail
