// Reference for fixed point fixed<w>_<f> and int<w>: a w-bit two's complement
// integer I with value I * 2^-f. Rounding takes floor and ceiling of |x| * 2^f,
// then saturates at -2^(w-1) .. 2^(w-1)-1 or, under :wrap, reduces the rounded
// integer mod 2^w. NaN gives 0, +-Inf saturates even under :wrap, one zero.
#include <gmp.h>

#include <cmath>

#include "tests/reference/ref_internal.h"

namespace emu::ref::detail {
namespace {

// I * 2^-f as a double (+0 for I = 0).
double value_of(const Format& f, const mpz_t I) {
  if (mpz_sgn(I) == 0) return 0.0;
  Rational v = Rational::from_mpz(I);
  v.scale2(-f.frac_bits);
  return v.to_double_exact();
}

double extreme(const Format& f, bool negative) {
  mpz_t I;
  mpz_init(I);
  mpz_setbit(I, f.nbits - 1);  // 2^(w-1)
  if (negative)
    mpz_neg(I, I);
  else
    mpz_sub_ui(I, I, 1);
  double v = value_of(f, I);
  mpz_clear(I);
  return v;
}

}  // namespace

double fixed_decode(const Format& f, uint64_t code) {
  const int w = f.nbits;
  mpz_t I;
  mpz_init(I);
  uint64_t bits = w >= 64 ? code : code & ((1ull << w) - 1);
  mpz_import(I, 1, 1, sizeof bits, 0, 0, &bits);
  if (mpz_tstbit(I, w - 1)) {  // negative: I - 2^w
    mpz_t m;
    mpz_init(m);
    mpz_setbit(m, w);
    mpz_sub(I, I, m);
    mpz_clear(m);
  }
  double v = value_of(f, I);
  mpz_clear(I);
  return v;
}

bool fixed_encode(const Format& f, double v, uint64_t* code) {
  if (std::isnan(v) || std::isinf(v)) return false;
  if (v == 0) {
    *code = 0;
    return true;
  }
  Rational t = Rational::from_double(v);
  t.scale2(f.frac_bits);
  if (mpz_cmp_ui(mpq_denref(t.get()), 1) != 0) return false;  // not on the 2^-f grid
  mpz_t I, lim;
  mpz_init_set(I, mpq_numref(t.get()));
  mpz_init(lim);
  mpz_setbit(lim, f.nbits - 1);
  bool ok = mpz_cmp(I, lim) < 0;
  mpz_neg(lim, lim);
  ok = ok && mpz_cmp(I, lim) >= 0;
  if (ok) {
    mpz_t m;
    mpz_init(m);
    mpz_setbit(m, f.nbits);
    mpz_fdiv_r(I, I, m);  // two's complement code
    *code = mpz_get_ui(I);
    mpz_clear(m);
  }
  mpz_clear(I);
  mpz_clear(lim);
  return ok;
}

uint32_t fixed_below32(const Format& f, const Rational& magnitude, bool /*tail*/) {
  Rational s = magnitude;
  s.scale2(f.frac_bits);
  mpz_t k;
  mpz_init(k);
  s.floor_into(k);
  s -= Rational::from_mpz(k);
  mpz_clear(k);
  return fraction_bits32(s);
}

double fixed_round(const Format& f, const Rational& magnitude, bool negative, bool tail, uint32_t rand) {
  Rational s = magnitude;
  s.scale2(f.frac_bits);
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
  if (negative) mpz_neg(k, k);
  mpz_t half;
  mpz_init(half);
  mpz_setbit(half, f.nbits - 1);  // 2^(w-1)
  if (f.saturate) {
    if (mpz_cmp(k, half) >= 0) {
      mpz_sub_ui(k, half, 1);
    } else {
      mpz_neg(half, half);
      if (mpz_cmp(k, half) < 0) mpz_set(k, half);
    }
  } else {
    mpz_t modulus;
    mpz_init(modulus);
    mpz_mul_2exp(modulus, half, 1);
    mpz_fdiv_r(k, k, modulus);                          // 0 .. 2^w - 1
    if (mpz_cmp(k, half) >= 0) mpz_sub(k, k, modulus);  // -2^(w-1) .. 2^(w-1) - 1
    mpz_clear(modulus);
  }
  double v = value_of(f, k);
  mpz_clear(k);
  mpz_clear(half);
  return v;
}

double fixed_special(const Format& f, RefExact::Kind kind, bool negative) {
  if (kind == RefExact::Kind::Inf) return extreme(f, negative);  // even under :wrap
  return 0.0;                                                    // NaN and zeros
}

}  // namespace emu::ref::detail
