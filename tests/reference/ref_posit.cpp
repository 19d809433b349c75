// Reference for posits posit<n>_<es> (Posit Standard 2022, with a free es).
//
// Decoding parses the bit string after the sign: a regime run of equal bits
// (terminated by the opposite bit or the end), then up to es exponent bits
// (bits cut off by the end read as 0), then the fraction; negative codes are
// the two's complement of positive ones. Rounding never touches the bits of
// the input: the posit magnitudes are monotonic in the code, so the two
// neighbours of |x| are found by a binary search over codes, comparing exact
// rationals. The tie point between codes c and c+1 is the value of the
// (n+1)-bit posit 2c+1, and the SR fraction of the encoding is the position
// of |x| among the (n+32)-bit posits between them (both are what "cut the
// infinite bit string" means, expressed with values only).
#include <gmp.h>

#include <cmath>

#include "tests/reference/ref_internal.h"

namespace emu::ref::detail {
namespace {

using u128 = unsigned __int128;

Rational from_u128(u128 v) {
  Rational r = Rational::from_u64(static_cast<uint64_t>(v >> 64));
  r.scale2(64);
  r += Rational::from_u64(static_cast<uint64_t>(v));
  return r;
}

// The magnitude of the N-bit posit code c, 1 <= c < 2^(N-1) (sign bit clear).
Rational magnitude_of(int N, int es, u128 c) {
  int pos = N - 2;  // the bit right after the sign
  const bool r0 = (c >> pos) & 1;
  long run = 0;
  while (pos >= 0 && static_cast<bool>((c >> pos) & 1) == r0) {
    ++run;
    --pos;
  }
  if (pos >= 0) --pos;  // the terminating bit
  const long k = r0 ? run - 1 : -run;
  long e = 0;
  for (int i = 0; i < es; ++i) {
    e <<= 1;
    if (pos >= 0) {
      e |= static_cast<long>((c >> pos) & 1);
      --pos;
    }
  }
  const int fl = pos + 1;  // fraction bits left
  const u128 F = fl > 0 ? c & ((static_cast<u128>(1) << fl) - 1) : 0;
  Rational v = from_u128((static_cast<u128>(1) << fl) + F);
  v.scale2(k * (1L << es) + e - fl);
  return v;
}

u128 max_code(int N) { return (static_cast<u128>(1) << (N - 1)) - 1; }

// The largest code c in [lo, hi) with magnitude_of(c) <= a, given that
// magnitude_of(lo) <= a < magnitude_of(hi).
u128 floor_code(int N, int es, const Rational& a, u128 lo, u128 hi) {
  while (hi - lo > 1) {
    u128 mid = lo + (hi - lo) / 2;
    if (magnitude_of(N, es, mid) <= a)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace

double posit_decode(const Format& f, uint64_t code) {
  const int n = f.nbits;
  const u128 modulus = static_cast<u128>(1) << n;
  u128 c = static_cast<u128>(code) & (modulus - 1);
  if (c == 0) return 0.0;
  if (c == modulus / 2) return quiet_nan_value();  // NaR
  const bool negative = c >= modulus / 2;
  if (negative) c = modulus - c;
  return with_sign(magnitude_of(n, f.es, c).to_double_exact(), negative);
}

bool posit_encode(const Format& f, double v, uint64_t* code) {
  const int n = f.nbits;
  const u128 modulus = static_cast<u128>(1) << n;
  if (std::isnan(v)) {
    *code = static_cast<uint64_t>(modulus / 2);
    return true;
  }
  if (std::isinf(v)) return false;
  if (v == 0) {
    *code = 0;
    return true;
  }
  Rational a = Rational::from_double(v).abs();
  const u128 top = max_code(n);
  if (a < magnitude_of(n, f.es, 1) || a > magnitude_of(n, f.es, top)) return false;
  u128 c = a == magnitude_of(n, f.es, top) ? top : floor_code(n, f.es, a, 1, top);
  if (magnitude_of(n, f.es, c) != a) return false;
  if (v < 0) c = modulus - c;
  *code = static_cast<uint64_t>(c & (modulus - 1));
  return true;
}

uint32_t posit_below32(const Format& f, const Rational& magnitude, bool tail) {
  const int n = f.nbits, es = f.es;
  const u128 top = max_code(n);
  if (magnitude >= magnitude_of(n, es, top)) return 0;
  if (magnitude < magnitude_of(n, es, 1) || (magnitude == magnitude_of(n, es, 1) && !tail)) return 0;
  u128 c = floor_code(n, es, magnitude, 1, top);
  // The (n+32)-bit posit c * 2^32 has the value of the n-bit posit c.
  const u128 lo = c << 32, hi = (c + 1) << 32;
  return static_cast<uint32_t>(floor_code(n + 32, es, magnitude, lo, hi) - lo);
}

double posit_round(const Format& f, const Rational& magnitude, bool negative, bool tail, uint32_t rand) {
  const int n = f.nbits, es = f.es;
  const u128 top = max_code(n);
  const Rational maxpos = magnitude_of(n, es, top), minpos = magnitude_of(n, es, 1);
  u128 code;
  if (magnitude >= maxpos) {
    code = top;  // never past maxpos
  } else if (magnitude < minpos || (magnitude == minpos && !tail)) {
    code = 1;  // never to zero
  } else {
    code = floor_code(n, es, magnitude, 1, top);
    if (magnitude != magnitude_of(n, es, code) || tail) {
      const Rational tie = magnitude_of(n + 1, es, 2 * code + 1);
      int c = cmp(magnitude, tie);
      Half where = c < 0 ? Half::Below : (c > 0 || tail) ? Half::Above : Half::Tie;
      uint32_t below32 = f.rounding == Rounding::Stochastic ? posit_below32(f, magnitude, tail) : 0;
      if (step_up(f.rounding, negative, where, code & 1, below32, rand)) code += 1;
    }
  }
  return with_sign(magnitude_of(n, es, code).to_double_exact(), negative);
}

double posit_special(const Format& /*f*/, RefExact::Kind kind, bool /*negative*/) {
  // NaN and Inf become NaR; posits have one zero.
  return kind == RefExact::Kind::Zero ? 0.0 : quiet_nan_value();
}

}  // namespace emu::ref::detail
