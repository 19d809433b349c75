// The reference's entry points for values: decode, encode, R_f, and the one
// rounding decision every family shares once it knows the two neighbours.
#include <gmp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tests/reference/ref_internal.h"

namespace emu::ref {
namespace detail {

bool step_up(Rounding mode, bool negative, Half where, bool lower_odd, uint32_t below32, uint32_t rand) {
  switch (mode) {
    case Rounding::NearestEven:
      return where == Half::Above || (where == Half::Tie && lower_odd);
    case Rounding::NearestAway:
      return where != Half::Below;
    case Rounding::TowardZero:
      return false;
    case Rounding::Up:
      return !negative;
    case Rounding::Down:
      return negative;
    case Rounding::Stochastic:
      // Away from zero exactly when below32 + rand >= 2^32 (docs/contract.md section 2.4).
      return static_cast<uint64_t>(below32) + rand >= (1ull << 32);
  }
  return false;
}

uint32_t fraction_bits32(const Rational& r) {
  mpz_t t;
  mpz_init(t);
  mpz_mul_2exp(t, mpq_numref(r.get()), 32);
  mpz_fdiv_q(t, t, mpq_denref(r.get()));
  uint32_t v = static_cast<uint32_t>(mpz_get_ui(t));
  mpz_clear(t);
  return v;
}

double quiet_nan_value() { return std::numeric_limits<double>::quiet_NaN(); }
double inf_value(bool negative) {
  return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}
double signed_zero(bool negative) { return negative ? -0.0 : 0.0; }
double with_sign(double magnitude, bool negative) { return negative ? -magnitude : magnitude; }

}  // namespace detail

using namespace detail;

RefExact RefExact::zero(bool negative) {
  RefExact x;
  x.kind = Kind::Zero;
  x.negative = negative;
  return x;
}
RefExact RefExact::inf(bool negative) {
  RefExact x;
  x.kind = Kind::Inf;
  x.negative = negative;
  return x;
}
RefExact RefExact::nan() {
  RefExact x;
  x.kind = Kind::NaN;
  return x;
}
RefExact RefExact::of(const Rational& value, bool zero_negative) {
  if (value.is_zero()) return zero(zero_negative);
  RefExact x;
  x.kind = Kind::Finite;
  x.negative = value.sign() < 0;
  x.magnitude = value.abs();
  return x;
}
RefExact RefExact::of(double v) {
  if (std::isnan(v)) return nan();
  if (std::isinf(v)) return inf(v < 0);
  if (v == 0) return zero(std::signbit(v));
  return of(Rational::from_double(v));
}

double ref_decode(const Format& f, uint64_t code) {
  switch (f.family) {
    case Family::Ieee:
      return ieee_decode(f, code);
    case Family::Posit:
      return posit_decode(f, code);
    case Family::Fixed:
      return fixed_decode(f, code);
  }
  return quiet_nan_value();
}

bool ref_encode(const Format& f, double v, uint64_t* code) {
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

double ref_round(const Format& f, const Rational& value, bool tail, uint32_t rand) {
  const bool negative = value.sign() < 0;
  const Rational magnitude = value.abs();
  switch (f.family) {
    case Family::Ieee:
      return ieee_round(f, magnitude, negative, tail, rand);
    case Family::Posit:
      return posit_round(f, magnitude, negative, tail, rand);
    case Family::Fixed:
      return fixed_round(f, magnitude, negative, tail, rand);
  }
  return quiet_nan_value();
}

double ref_round(const Format& f, const RefExact& x, uint32_t rand) {
  if (x.kind == RefExact::Kind::Finite) {
    switch (f.family) {
      case Family::Ieee:
        return ieee_round(f, x.magnitude, x.negative, x.tail, rand);
      case Family::Posit:
        return posit_round(f, x.magnitude, x.negative, x.tail, rand);
      case Family::Fixed:
        return fixed_round(f, x.magnitude, x.negative, x.tail, rand);
    }
  }
  switch (f.family) {
    case Family::Ieee:
      return ieee_special(f, x.kind, x.negative);
    case Family::Posit:
      return posit_special(f, x.kind, x.negative);
    case Family::Fixed:
      return fixed_special(f, x.kind, x.negative);
  }
  return quiet_nan_value();
}

uint32_t ref_below32(const Format& f, const Rational& value, bool tail) {
  const Rational magnitude = value.abs();
  switch (f.family) {
    case Family::Ieee:
      return ieee_below32(f, magnitude, tail);
    case Family::Posit:
      return posit_below32(f, magnitude, tail);
    case Family::Fixed:
      return fixed_below32(f, magnitude, tail);
  }
  return 0;
}

double ref_quantize(const Format& f, double x, uint32_t rand) { return ref_round(f, RefExact::of(x), rand); }

}  // namespace emu::ref
