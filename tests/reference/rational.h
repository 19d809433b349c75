// An exact rational number (GMP mpq_t) with value semantics, for the reference.
//
// Only what the reference needs: construction from integers, doubles and powers
// of two, + - * /, comparison, floor, floor(log2), and exact conversion back to
// a double. Everything is exact; nothing here rounds.
#pragma once

#include <gmp.h>

#include <cstdint>
#include <string>

namespace emu::ref {

class Rational {
 public:
  Rational() { mpq_init(q_); }
  explicit Rational(long v) {
    mpq_init(q_);
    mpq_set_si(q_, v, 1);
  }
  Rational(const Rational& o) {
    mpq_init(q_);
    mpq_set(q_, o.q_);
  }
  Rational(Rational&& o) noexcept {
    mpq_init(q_);
    mpq_swap(q_, o.q_);
  }
  Rational& operator=(const Rational& o) {
    if (this != &o) mpq_set(q_, o.q_);
    return *this;
  }
  Rational& operator=(Rational&& o) noexcept {
    mpq_swap(q_, o.q_);
    return *this;
  }
  ~Rational() { mpq_clear(q_); }

  // A finite double, exactly.
  static Rational from_double(double v);
  // An unsigned 64-bit integer, exactly.
  static Rational from_u64(uint64_t v);
  // An integer given as an mpz_t.
  static Rational from_mpz(const mpz_t z);
  // 2^e.
  static Rational pow2(long e);
  // num * 2^e, for an unsigned integer num.
  static Rational scaled(uint64_t num, long e);

  mpq_ptr get() { return q_; }
  mpq_srcptr get() const { return q_; }

  int sign() const { return mpq_sgn(q_); }
  bool is_zero() const { return mpq_sgn(q_) == 0; }
  Rational abs() const;
  Rational operator-() const;

  Rational& operator+=(const Rational& o) {
    mpq_add(q_, q_, o.q_);
    return *this;
  }
  Rational& operator-=(const Rational& o) {
    mpq_sub(q_, q_, o.q_);
    return *this;
  }
  Rational& operator*=(const Rational& o) {
    mpq_mul(q_, q_, o.q_);
    return *this;
  }
  Rational& operator/=(const Rational& o) {
    mpq_div(q_, q_, o.q_);
    return *this;
  }
  // Multiplies by 2^e (e may be negative).
  Rational& scale2(long e);

  friend Rational operator+(Rational a, const Rational& b) { return a += b; }
  friend Rational operator-(Rational a, const Rational& b) { return a -= b; }
  friend Rational operator*(Rational a, const Rational& b) { return a *= b; }
  friend Rational operator/(Rational a, const Rational& b) { return a /= b; }

  friend int cmp(const Rational& a, const Rational& b) { return mpq_cmp(a.q_, b.q_); }
  friend bool operator==(const Rational& a, const Rational& b) { return mpq_equal(a.q_, b.q_) != 0; }
  friend bool operator!=(const Rational& a, const Rational& b) { return !(a == b); }
  friend bool operator<(const Rational& a, const Rational& b) { return cmp(a, b) < 0; }
  friend bool operator>(const Rational& a, const Rational& b) { return cmp(a, b) > 0; }
  friend bool operator<=(const Rational& a, const Rational& b) { return cmp(a, b) <= 0; }
  friend bool operator>=(const Rational& a, const Rational& b) { return cmp(a, b) >= 0; }

  // floor(log2(x)) for x > 0.
  long floor_log2() const;
  // floor(x) into z.
  void floor_into(mpz_t z) const;
  // The value as a double; aborts if it is not exactly a binary64 value
  // (the reference only converts format values, which all are).
  double to_double_exact() const;
  std::string str() const;

 private:
  mpq_t q_;
};

}  // namespace emu::ref
