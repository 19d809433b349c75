// Exact + - * / sqrt as rationals (sqrt: MPFR at 320 bits plus its inexact
// flag), special values by IEEE 754, and R_f of the result.
#include <gmp.h>
#include <mpfr.h>

#include <cstdio>
#include <cstdlib>

#include "tests/reference/ref_internal.h"

namespace emu::ref {
namespace {

using Kind = RefExact::Kind;

Rational signed_value(const RefExact& x) {
  if (x.tail) {
    std::fprintf(stderr, "emu::ref: arithmetic on an inexact (tail) operand\n");
    std::abort();
  }
  if (x.kind == Kind::Zero) return Rational(0);
  return x.negative ? -x.magnitude : x.magnitude;
}

bool rounds_down(const Format& f) { return f.rounding == Rounding::Down; }

constexpr mpfr_prec_t kSqrtBits = 320;

}  // namespace

RefExact exact_sum(const RefExact& a, const RefExact& b, bool round_down) {
  if (a.kind == Kind::NaN || b.kind == Kind::NaN) return RefExact::nan();
  if (a.kind == Kind::Inf && b.kind == Kind::Inf && a.negative != b.negative) return RefExact::nan();
  if (a.kind == Kind::Inf) return RefExact::inf(a.negative);
  if (b.kind == Kind::Inf) return RefExact::inf(b.negative);
  if (a.kind == Kind::Zero && b.kind == Kind::Zero)
    return RefExact::zero(a.negative == b.negative ? a.negative : round_down);
  return RefExact::of(signed_value(a) + signed_value(b), round_down);
}

RefExact exact_product(const RefExact& a, const RefExact& b) {
  const bool negative = a.negative != b.negative;
  if (a.kind == Kind::NaN || b.kind == Kind::NaN) return RefExact::nan();
  if (a.kind == Kind::Inf || b.kind == Kind::Inf) {
    if (a.kind == Kind::Zero || b.kind == Kind::Zero) return RefExact::nan();
    return RefExact::inf(negative);
  }
  if (a.kind == Kind::Zero || b.kind == Kind::Zero) return RefExact::zero(negative);
  return RefExact::of(signed_value(a) * signed_value(b));
}

RefExact exact_quotient(const RefExact& a, const RefExact& b) {
  const bool negative = a.negative != b.negative;
  if (a.kind == Kind::NaN || b.kind == Kind::NaN) return RefExact::nan();
  if (a.kind == Kind::Inf) return b.kind == Kind::Inf ? RefExact::nan() : RefExact::inf(negative);
  if (b.kind == Kind::Inf) return RefExact::zero(negative);
  if (b.kind == Kind::Zero) return a.kind == Kind::Zero ? RefExact::nan() : RefExact::inf(negative);
  if (a.kind == Kind::Zero) return RefExact::zero(negative);
  return RefExact::of(signed_value(a) / signed_value(b));
}

RefExact exact_square_root(const RefExact& a) {
  if (a.kind == Kind::NaN) return a;
  if (a.kind == Kind::Zero) return RefExact::zero(a.negative);  // sqrt(-0) = -0
  if (a.negative) return RefExact::nan();
  if (a.kind == Kind::Inf) return RefExact::inf(false);
  mpfr_t x, r;
  mpfr_init2(x, kSqrtBits);
  mpfr_init2(r, kSqrtBits);
  if (mpfr_set_q(x, a.magnitude.get(), MPFR_RNDN) != 0) {
    std::fprintf(stderr, "emu::ref: sqrt operand %s does not fit %ld bits\n", a.magnitude.str().c_str(),
                 static_cast<long>(kSqrtBits));
    std::abort();
  }
  // Truncated root and whether anything was cut off: sqrt of a dyadic rational
  // is either exact in far fewer bits or irrational.
  int inexact = mpfr_sqrt(r, x, MPFR_RNDZ);
  mpz_t m;
  mpz_init(m);
  mpfr_exp_t e = mpfr_get_z_2exp(m, r);
  RefExact out;
  out.kind = Kind::Finite;
  out.magnitude = Rational::from_mpz(m);
  out.magnitude.scale2(e);
  out.tail = inexact != 0;
  mpz_clear(m);
  mpfr_clear(x);
  mpfr_clear(r);
  return out;
}

double ref_add(const Format& f, double a, double b, uint32_t rand) {
  return ref_round(f, exact_sum(RefExact::of(a), RefExact::of(b), rounds_down(f)), rand);
}
double ref_sub(const Format& f, double a, double b, uint32_t rand) {
  return ref_round(f, exact_sum(RefExact::of(a), RefExact::of(-b), rounds_down(f)), rand);
}
double ref_mul(const Format& f, double a, double b, uint32_t rand) {
  return ref_round(f, exact_product(RefExact::of(a), RefExact::of(b)), rand);
}
double ref_div(const Format& f, double a, double b, uint32_t rand) {
  return ref_round(f, exact_quotient(RefExact::of(a), RefExact::of(b)), rand);
}
double ref_sqrt(const Format& f, double a, uint32_t rand) {
  return ref_round(f, exact_square_root(RefExact::of(a)), rand);
}

}  // namespace emu::ref
