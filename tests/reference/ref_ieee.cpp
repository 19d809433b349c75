// Reference for IEEE-like formats eXmY (and the OCP fn / finite-only variants),
// from the format definition: a code is sign | biased exponent (X bits) |
// fraction (m bits), bias 2^(X-1)-1, biased 0 = subnormals, the top biased
// exponent as the specials say. Rounding finds the two neighbours of |x| on
// the grid of its binade (exponent unbounded above, the subnormal grid below
// 2^emin) with exact rationals and applies docs/contract.md section 2's rules.
#include <gmp.h>

#include <cmath>

#include "tests/reference/ref_internal.h"

namespace emu::ref::detail {
namespace {

struct Ieee {
  int X, m;
  long bias, emin;
  uint64_t top;  // biased exponent all ones
  Specials specials;
};

Ieee geometry(const Format& f) {
  Ieee g;
  g.X = f.exp_bits;
  g.m = f.man_bits;
  g.bias = (1L << (g.X - 1)) - 1;
  g.emin = 1 - g.bias;
  g.top = (1ull << g.X) - 1;
  g.specials = f.specials;
  return g;
}

// The value of a finite (biased exponent, fraction) pair, subnormals read as such.
Rational finite_value(const Ieee& g, uint64_t biased, uint64_t man) {
  if (biased == 0) return Rational::scaled(man, g.emin - g.m);
  return Rational::scaled((1ull << g.m) + man, static_cast<long>(biased) - g.bias - g.m);
}

// The largest finite magnitude, read with subnormals on (a :nosub format rounds
// on that grid first and flushes afterwards, docs/contract.md section 2.7).
Rational max_finite(const Ieee& g) {
  const uint64_t man_all = (1ull << g.m) - 1;
  switch (g.specials) {
    case Specials::InfNan:
      return finite_value(g, g.top - 1, man_all);
    case Specials::FiniteOnly:
      return finite_value(g, g.top, man_all);
    case Specials::NanOnly:
      // Only S.1..1.1..1 is NaN: the top binade minus its last code.
      if (g.m == 0) return finite_value(g, g.top - 1, 0);
      return finite_value(g, g.top, man_all - 1);
  }
  return Rational(0);
}

bool rounds_toward_zero(Rounding mode, bool negative) {
  return mode == Rounding::TowardZero || (mode == Rounding::Up && negative) ||
         (mode == Rounding::Down && !negative);
}

// Where a result whose magnitude exceeds the largest finite value ends up.
double overflow(const Format& f, const Ieee& g, bool negative, bool toward_zero) {
  if (f.saturate || g.specials == Specials::FiniteOnly || toward_zero)
    return with_sign(max_finite(g).to_double_exact(), negative);
  if (g.specials == Specials::NanOnly) return quiet_nan_value();
  return inf_value(negative);
}

// The exponent of the grid unit at magnitude a > 0: its binade's ulp, or the
// subnormal ulp below 2^emin.
long unit_exponent(const Ieee& g, const Rational& a) {
  long e = a.floor_log2();
  return (e > g.emin ? e : g.emin) - g.m;
}

}  // namespace

double ieee_decode(const Format& f, uint64_t code) {
  const Ieee g = geometry(f);
  const uint64_t man_all = (1ull << g.m) - 1;
  bool negative = (code >> (g.X + g.m)) & 1;
  uint64_t biased = (code >> g.m) & g.top;
  uint64_t man = code & man_all;
  if (biased == g.top) {
    if (g.specials == Specials::InfNan) return man == 0 ? inf_value(negative) : quiet_nan_value();
    if (g.specials == Specials::NanOnly && man == man_all) return quiet_nan_value();
  }
  if (biased == 0 && !f.subnormals) return signed_zero(negative);
  Rational v = finite_value(g, biased, man);
  if (v.is_zero()) return signed_zero(negative);
  return with_sign(v.to_double_exact(), negative);
}

bool ieee_encode(const Format& f, double v, uint64_t* code) {
  const Ieee g = geometry(f);
  const uint64_t man_all = (1ull << g.m) - 1;
  const uint64_t sign = static_cast<uint64_t>(std::signbit(v)) << (g.X + g.m);
  if (std::isnan(v)) {
    if (g.specials == Specials::InfNan && g.m > 0) {
      *code = (g.top << g.m) | (1ull << (g.m - 1));
      return true;
    }
    if (g.specials == Specials::NanOnly) {
      *code = (g.top << g.m) | man_all;
      return true;
    }
    return false;
  }
  if (std::isinf(v)) {
    if (g.specials != Specials::InfNan) return false;
    *code = sign | (g.top << g.m);
    return true;
  }
  if (v == 0) {
    *code = sign;
    return true;
  }
  Rational a = Rational::from_double(v).abs();
  if (a > max_finite(g)) return false;
  long e = a.floor_log2();
  bool subnormal = e < g.emin;
  if (subnormal && !f.subnormals) return false;
  // t = a / 2^(e - m) must be an integer: 2^m + fraction, or the subnormal fraction.
  Rational t = a;
  t.scale2(-((subnormal ? g.emin : e) - g.m));
  if (mpz_cmp_ui(mpq_denref(t.get()), 1) != 0) return false;  // not on the grid
  uint64_t sig = mpz_get_ui(mpq_numref(t.get()));
  uint64_t biased = subnormal ? 0 : static_cast<uint64_t>(e + g.bias);
  *code = sign | (biased << g.m) | (sig & man_all);
  return true;
}

uint32_t ieee_below32(const Format& f, const Rational& magnitude, bool /*tail*/) {
  const Ieee g = geometry(f);
  Rational s = magnitude;
  s.scale2(-unit_exponent(g, magnitude));
  mpz_t k;
  mpz_init(k);
  s.floor_into(k);
  s -= Rational::from_mpz(k);
  mpz_clear(k);
  return fraction_bits32(s);
}

double ieee_round(const Format& f, const Rational& magnitude, bool negative, bool tail, uint32_t rand) {
  const Ieee g = geometry(f);
  const long ue = unit_exponent(g, magnitude);
  // magnitude / unit = k + rem, 0 <= rem < 1.
  Rational s = magnitude;
  s.scale2(-ue);
  mpz_t k;
  mpz_init(k);
  s.floor_into(k);
  Rational rem = s - Rational::from_mpz(k);
  if (!rem.is_zero() || tail) {
    int c = cmp(rem, Rational::pow2(-1));
    Half where = c < 0 ? Half::Below : (c > 0 || tail) ? Half::Above : Half::Tie;
    uint32_t below32 = f.rounding == Rounding::Stochastic ? fraction_bits32(rem) : 0;
    if (step_up(f.rounding, negative, where, mpz_odd_p(k), below32, rand)) mpz_add_ui(k, k, 1);
  }
  Rational result = Rational::from_mpz(k);
  mpz_clear(k);
  result.scale2(ue);
  if (result > max_finite(g)) return overflow(f, g, negative, rounds_toward_zero(f.rounding, negative));
  // :nosub flushes a subnormal result to a zero of its sign, after rounding.
  if (result.is_zero() || (!f.subnormals && result < Rational::pow2(g.emin))) return signed_zero(negative);
  return with_sign(result.to_double_exact(), negative);
}

double ieee_special(const Format& f, RefExact::Kind kind, bool negative) {
  const Ieee g = geometry(f);
  switch (kind) {
    case RefExact::Kind::NaN:
      return quiet_nan_value();
    case RefExact::Kind::Zero:
      return signed_zero(negative);
    case RefExact::Kind::Inf:
      return overflow(f, g, negative, false);
    case RefExact::Kind::Finite:
      break;
  }
  return quiet_nan_value();
}

}  // namespace emu::ref::detail
