#include "tests/reference/rational.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace emu::ref {

Rational Rational::from_double(double v) {
  if (!std::isfinite(v)) {
    std::fprintf(stderr, "emu::ref::Rational::from_double: %a is not finite\n", v);
    std::abort();
  }
  Rational r;
  mpq_set_d(r.q_, v);  // exact: every finite double is a dyadic rational
  return r;
}

Rational Rational::from_u64(uint64_t v) {
  Rational r;
  mpz_import(mpq_numref(r.q_), 1, 1, sizeof v, 0, 0, &v);
  return r;
}

Rational Rational::from_mpz(const mpz_t z) {
  Rational r;
  mpq_set_z(r.q_, z);
  return r;
}

Rational Rational::pow2(long e) {
  Rational r(1);
  return std::move(r.scale2(e));
}

Rational Rational::scaled(uint64_t num, long e) {
  Rational r = from_u64(num);
  return std::move(r.scale2(e));
}

Rational Rational::abs() const {
  Rational r;
  mpq_abs(r.q_, q_);
  return r;
}

Rational Rational::operator-() const {
  Rational r;
  mpq_neg(r.q_, q_);
  return r;
}

Rational& Rational::scale2(long e) {
  if (e >= 0)
    mpq_mul_2exp(q_, q_, static_cast<mp_bitcnt_t>(e));
  else
    mpq_div_2exp(q_, q_, static_cast<mp_bitcnt_t>(-e));
  return *this;
}

long Rational::floor_log2() const {
  // num / den with bit lengths a, b lies in [2^(a-b-1), 2^(a-b+1)).
  long a = static_cast<long>(mpz_sizeinbase(mpq_numref(q_), 2));
  long b = static_cast<long>(mpz_sizeinbase(mpq_denref(q_), 2));
  long e = a - b;
  // x >= 2^e  <=>  |num| >= den * 2^e
  mpz_t lhs, rhs;
  mpz_init(lhs);
  mpz_init(rhs);
  mpz_abs(lhs, mpq_numref(q_));
  mpz_set(rhs, mpq_denref(q_));
  if (e >= 0)
    mpz_mul_2exp(rhs, rhs, static_cast<mp_bitcnt_t>(e));
  else
    mpz_mul_2exp(lhs, lhs, static_cast<mp_bitcnt_t>(-e));
  if (mpz_cmp(lhs, rhs) < 0) --e;
  mpz_clear(lhs);
  mpz_clear(rhs);
  return e;
}

void Rational::floor_into(mpz_t z) const { mpz_fdiv_q(z, mpq_numref(q_), mpq_denref(q_)); }

double Rational::to_double_exact() const {
  double d = mpq_get_d(q_);  // truncates; exact when the value is a double
  Rational back = from_double(d);
  if (back != *this) {
    std::fprintf(stderr, "emu::ref::Rational::to_double_exact: %s is not a binary64 value\n", str().c_str());
    std::abort();
  }
  return d;
}

std::string Rational::str() const {
  char* s = mpq_get_str(nullptr, 10, q_);
  std::string r(s);
  void (*free_fn)(void*, size_t);
  mp_get_memory_functions(nullptr, nullptr, &free_fn);
  free_fn(s, r.size() + 1);
  return r;
}

}  // namespace emu::ref
