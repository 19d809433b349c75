#include "calc/print.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "numerics/round.h"

namespace emu::calc {
namespace {

using Limbs = std::vector<uint32_t>;

void trim(Limbs& a) {
  while (!a.empty() && a.back() == 0) a.pop_back();
}

int compare_mag(const Limbs& a, const Limbs& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

Limbs shift_left(const Limbs& a, int k) {
  if (a.empty()) return a;
  Limbs r(static_cast<size_t>(k / 32), 0u);
  int bits = k % 32;
  uint32_t carry = 0;
  for (uint32_t limb : a) {
    r.push_back(bits ? (limb << bits) | carry : limb);
    carry = bits ? limb >> (32 - bits) : 0;
  }
  if (carry) r.push_back(carry);
  return r;
}

Limbs add_mag(const Limbs& a, const Limbs& b) {
  Limbs r;
  uint64_t carry = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    uint64_t s = carry + (i < a.size() ? a[i] : 0) + (i < b.size() ? b[i] : 0);
    r.push_back(static_cast<uint32_t>(s));
    carry = s >> 32;
  }
  if (carry) r.push_back(static_cast<uint32_t>(carry));
  return r;
}

// a - b for a >= b.
Limbs sub_mag(const Limbs& a, const Limbs& b) {
  Limbs r;
  int64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t d = static_cast<int64_t>(a[i]) - (i < b.size() ? b[i] : 0) - borrow;
    borrow = d < 0;
    r.push_back(static_cast<uint32_t>(d + (borrow << 32)));
  }
  trim(r);
  return r;
}

void mul_small(Limbs& a, uint32_t m) {
  uint64_t carry = 0;
  for (uint32_t& limb : a) {
    uint64_t p = static_cast<uint64_t>(limb) * m + carry;
    limb = static_cast<uint32_t>(p);
    carry = p >> 32;
  }
  if (carry) a.push_back(static_cast<uint32_t>(carry));
}

// a /= d, returns the remainder.
uint32_t divmod_small(Limbs& a, uint32_t d) {
  uint64_t rem = 0;
  for (size_t i = a.size(); i-- > 0;) {
    uint64_t cur = (rem << 32) | a[i];
    a[i] = static_cast<uint32_t>(cur / d);
    rem = cur % d;
  }
  trim(a);
  return static_cast<uint32_t>(rem);
}

std::string to_decimal_string(Limbs a) {
  if (a.empty()) return "0";
  std::string out;
  while (!a.empty()) {
    uint32_t chunk = divmod_small(a, 1000000000u);
    for (int i = 0; i < 9; ++i) {
      out.push_back(static_cast<char>('0' + chunk % 10));
      chunk /= 10;
    }
  }
  while (out.size() > 1 && out.back() == '0') out.pop_back();
  std::reverse(out.begin(), out.end());
  return out;
}

// mag * 2^exp as an integer N and exp10 with value = N * 10^exp10, for a
// common exponent `e` <= exp (so that two values share exp10).
Limbs scaled_integer(const Dyadic& d, int e, int* exp10) {
  if (e >= 0) {
    *exp10 = 0;
    return shift_left(d.mag, d.exp);
  }
  Limbs n = shift_left(d.mag, d.exp - e);
  for (int k = -e; k > 0; k -= 13) {
    uint32_t power = 1;  // 5^min(k, 13) < 2^32
    for (int i = 0; i < std::min(k, 13); ++i) power *= 5;
    mul_small(n, power);
  }
  *exp10 = e;
  return n;
}

// value = digits * 10^exp10 (digits without leading zeros, not "0"); `more`:
// nonzero digits follow the ones given.
std::string format_digits(bool negative, std::string digits, int exp10, bool more, bool keep_zeros = false) {
  if (!more && !keep_zeros) {
    while (digits.size() > 1 && digits.back() == '0') {
      digits.pop_back();
      ++exp10;
    }
  }
  if (static_cast<int>(digits.size()) > kMaxDigits) {
    exp10 += static_cast<int>(digits.size()) - kMaxDigits;
    digits.resize(kMaxDigits);
    more = true;
  }
  const int len = static_cast<int>(digits.size());
  const int sci = exp10 + len - 1;  // value in [10^sci, 10^(sci+1))
  std::string out = negative ? "-" : "";
  const char* dots = more ? "..." : "";
  // Positional where it is short and every digit printed is known.
  if (sci >= -4 && sci < 21 && (exp10 <= 0 || !more)) {
    if (exp10 >= 0) return out + digits + std::string(exp10, '0') + dots;
    if (len > -exp10) return out + digits.substr(0, len + exp10) + "." + digits.substr(len + exp10) + dots;
    return out + "0." + std::string(-exp10 - len, '0') + digits + dots;
  }
  out += digits.substr(0, 1);
  if (len > 1) out += "." + digits.substr(1);
  out += dots;
  return out + fmt::format("e{}{:02d}", sci < 0 ? '-' : '+', sci < 0 ? -sci : sci);
}

Dyadic normalized(Dyadic d) {
  trim(d.mag);
  if (d.mag.empty()) return d;
  // Make the magnitude odd, so powers of two are recognisable and sizes stay small.
  int zeros = 0;
  while (((d.mag[static_cast<size_t>(zeros / 32)] >> (zeros % 32)) & 1) == 0) ++zeros;
  if (zeros) {
    Limbs r;
    size_t words = static_cast<size_t>(zeros / 32);
    int bits = zeros % 32;
    for (size_t i = words; i < d.mag.size(); ++i) {
      uint32_t lo = d.mag[i] >> bits;
      uint32_t hi = bits && i + 1 < d.mag.size() ? d.mag[i + 1] << (32 - bits) : 0;
      r.push_back(lo | hi);
    }
    trim(r);
    d.mag = r;
    d.exp += zeros;
  }
  return d;
}

bool is_power_of_two(const Dyadic& d) {
  Dyadic n = normalized(d);
  return n.mag.size() == 1 && n.mag[0] == 1;
}

}  // namespace

Dyadic Dyadic::from_u128(bool negative, unsigned __int128 sig, int exp) {
  Dyadic d;
  d.negative = negative;
  d.exp = exp;
  for (int i = 0; i < 4; ++i) d.mag.push_back(static_cast<uint32_t>(sig >> (32 * i)));
  return normalized(d);
}

Dyadic Dyadic::from_double(double v) {
  Exact x = exact_from_double(v);
  if (x.kind != Exact::Finite) {
    Dyadic d;
    d.negative = x.negative;
    return d;
  }
  return from_u128(x.negative, x.sig, x.exp);
}

Dyadic operator+(const Dyadic& a, const Dyadic& b) {
  if (a.is_zero()) return b;
  if (b.is_zero()) return a;
  int e = std::min(a.exp, b.exp);
  Limbs x = shift_left(a.mag, a.exp - e), y = shift_left(b.mag, b.exp - e);
  Dyadic r;
  r.exp = e;
  if (a.negative == b.negative) {
    r.mag = add_mag(x, y);
    r.negative = a.negative;
  } else if (compare_mag(x, y) >= 0) {
    r.mag = sub_mag(x, y);
    r.negative = a.negative;
  } else {
    r.mag = sub_mag(y, x);
    r.negative = b.negative;
  }
  if (r.mag.empty()) r.negative = false;
  return normalized(r);
}

Dyadic operator-(const Dyadic& a, const Dyadic& b) {
  Dyadic nb = b;
  nb.negative = !b.negative;
  return a + nb;
}

Dyadic scale2(Dyadic a, int k) {
  a.exp += k;
  return a;
}

int compare(const Dyadic& a, const Dyadic& b) {
  Dyadic d = a - b;
  if (d.is_zero()) return 0;
  return d.negative ? -1 : 1;
}

double approx_double(const Dyadic& a) {
  if (a.is_zero()) return 0.0;
  // The top 64 bits are plenty for a ratio printed with 6 digits.
  size_t n = a.mag.size();
  uint64_t top = n >= 2 ? (static_cast<uint64_t>(a.mag[n - 1]) << 32) | a.mag[n - 2] : a.mag[0];
  int below = n >= 2 ? static_cast<int>(32 * (n - 2)) : 0;
  double v = std::ldexp(static_cast<double>(top), a.exp + below);
  return a.negative ? -v : v;
}

std::string decimal(const Dyadic& d) {
  if (d.is_zero()) return d.negative ? "-0" : "0";
  int exp10 = 0;
  Limbs n = scaled_integer(d, d.exp, &exp10);
  return format_digits(d.negative, to_decimal_string(n), exp10, false);
}

std::string decimal_between(const Dyadic& lo, const Dyadic& hi) {
  if (lo.negative != hi.negative && !lo.is_zero() && !hi.is_zero())
    return fmt::format("~0 (between {:.3g} and {:.3g})", approx_double(lo), approx_double(hi));
  const bool negative = lo.is_zero() ? hi.negative : lo.negative;
  Dyadic width = hi - lo;
  width.negative = false;
  // All three as integers times the same 10^exp10, zero-padded to one length.
  int e = std::min(lo.is_zero() ? hi.exp : lo.exp, hi.is_zero() ? lo.exp : hi.exp);
  int exp10 = 0;
  std::string a = to_decimal_string(scaled_integer(lo, std::min(e, 0), &exp10));
  std::string b = to_decimal_string(scaled_integer(hi, std::min(e, 0), &exp10));
  std::string w = to_decimal_string(scaled_integer(width, std::min(e, 0), &exp10));
  size_t len = std::max({a.size(), b.size(), w.size()});
  a.insert(0, len - a.size(), '0');
  b.insert(0, len - b.size(), '0');
  w.insert(0, len - w.size(), '0');
  size_t common = 0;
  while (common < len && a[common] == b[common]) ++common;
  size_t first = std::min(a.find_first_not_of('0'), b.find_first_not_of('0'));
  if (first != std::string::npos && first < common && common - first >= 6) {
    // Every value in the interval starts with these digits.
    return format_digits(negative, a.substr(first, common - first), exp10 + static_cast<int>(len - common),
                         true);
  }
  // The ends differ early (0.0999... and 0.1000...): round at the digit above
  // the interval's width instead, and say that it is approximate.
  size_t keep = w.find_first_not_of('0');
  std::string digits = b.substr(0, keep);
  if (keep < len && b[keep] >= '5') {
    size_t i = digits.size();
    while (i > 0 && digits[i - 1] == '9') digits[--i] = '0';
    if (i == 0)
      digits.insert(0, "1");
    else
      ++digits[i - 1];
  }
  size_t lead = digits.find_first_not_of('0');
  if (lead == std::string::npos)
    return fmt::format("~0 (between {:.3g} and {:.3g})", approx_double(lo), approx_double(hi));
  return "~" +
         format_digits(negative, digits.substr(lead), exp10 + static_cast<int>(len - keep), false, true);
}

std::string decimal(double v) {
  if (is_nan(v)) return "nan";
  if (is_inf(v)) return v < 0 ? "-inf" : "inf";
  return decimal(Dyadic::from_double(v));
}

std::string decimal(const Exact& x) {
  switch (x.kind) {
    case Exact::NaN:
      return "nan";
    case Exact::Inf:
      return x.negative ? "-inf" : "inf";
    case Exact::Zero:
      return x.negative ? "-0" : "0";
    case Exact::Finite:
      break;
  }
  Dyadic lo = Dyadic::from_u128(x.negative, x.sig, x.exp);
  if (!x.sticky) return decimal(lo);
  Dyadic unit = Dyadic::from_u128(x.negative, 1, x.exp);
  return decimal_between(lo, lo + unit);
}

std::string hex_float(double v) { return hex_float(exact_from_double(v)); }

std::string hex_float(const Exact& x) {
  switch (x.kind) {
    case Exact::NaN:
      return "nan";
    case Exact::Inf:
      return x.negative ? "-inf" : "inf";
    case Exact::Zero:
      return x.negative ? "-0x0p+0" : "0x0p+0";
    case Exact::Finite:
      break;
  }
  const int known = 127 - clz128(x.sig);  // fraction bits of sig after its leading one
  Exact n = emu::normalized(x);
  u128 fraction = n.sig << 1;  // the bits after the leading one
  std::string hex;
  for (int i = 0; i < 32; ++i)
    hex.push_back("0123456789abcdef"[static_cast<int>(fraction >> (124 - 4 * i)) & 15]);
  if (n.sticky) {
    // Only whole nibbles of known bits: a partly known one would not be a prefix of the true value.
    hex.resize(static_cast<size_t>(known / 4));
    if (hex.empty()) hex = "0";
  } else {
    while (!hex.empty() && hex.back() == '0') hex.pop_back();
  }
  int e = n.exp + 127;
  return fmt::format("{}0x1{}{}{}p{}{}", n.negative ? "-" : "", hex.empty() ? "" : ".", hex,
                     n.sticky ? "..." : "", e < 0 ? "-" : "+", e < 0 ? -e : e);
}

std::string binary32_bits(double v) { return fmt::format("0x{:08x}", float_bits(static_cast<float>(v))); }

std::string code_hex(uint64_t code, int nbits) { return fmt::format("0x{:0{}x}", code, (nbits + 3) / 4); }

std::string code_fields(const Format& f, uint64_t code) {
  code &= low_bits_mask(f.nbits);
  auto bits = [](uint64_t v, int from, int count) {  // `count` bits of v from bit `from` down
    std::string s;
    for (int i = 0; i < count; ++i) s.push_back(((v >> (from - i)) & 1) ? '1' : '0');
    return s;
  };
  switch (f.family) {
    case Family::Ieee: {
      std::string s = bits(code, f.nbits - 1, 1) + " " + bits(code, f.nbits - 2, f.exp_bits);
      if (f.man_bits > 0) s += " " + bits(code, f.man_bits - 1, f.man_bits);
      return s;
    }
    case Family::Posit: {
      const int n = f.nbits;
      std::string sign = bits(code, n - 1, 1);
      if (code == 0 || code == posit_nar(n)) return sign + " " + bits(code, n - 2, n - 1);
      uint64_t magnitude = (code >> (n - 1)) ? (~code + 1) & low_bits_mask(n) : code;
      std::string body = bits(magnitude, n - 2, n - 1);
      size_t run = 1;
      while (run < body.size() && body[run] == body[0]) ++run;
      size_t regime = std::min(run + 1, body.size());
      size_t exponent = std::min(static_cast<size_t>(f.es), body.size() - regime);
      std::string s = sign + " " + body.substr(0, regime);
      if (exponent) s += " " + body.substr(regime, exponent);
      if (regime + exponent < body.size()) s += " " + body.substr(regime + exponent);
      return s;
    }
    case Family::Fixed:
      return bits(code, f.nbits - 1, f.nbits);
  }
  return "";
}

std::string code_class(const Format& f, uint64_t code) {
  code &= low_bits_mask(f.nbits);
  switch (f.family) {
    case Family::Ieee: {
      bool negative = (code >> (f.nbits - 1)) & 1;
      uint64_t biased = (code >> f.man_bits) & ieee_exp_mask(f);
      uint64_t man = code & ieee_man_mask(f);
      if (biased == ieee_exp_mask(f)) {
        if (f.specials == Specials::InfNan) return man ? "NaN" : (negative ? "-Inf" : "+Inf");
        if (f.specials == Specials::NanOnly && man == ieee_man_mask(f)) return "NaN";
      }
      if (biased == 0) {
        if (man == 0) return negative ? "-0" : "+0";
        return f.subnormals ? "subnormal" : "subnormal code, reads as zero (:nosub)";
      }
      return "normal";
    }
    case Family::Posit: {
      if (code == 0) return "zero";
      if (code == posit_nar(f.nbits)) return "NaR";
      uint64_t magnitude = (code >> (f.nbits - 1)) ? (~code + 1) & low_bits_mask(f.nbits) : code;
      if (magnitude == posit_nar(f.nbits) - 1) return "maxpos magnitude";
      if (magnitude == 1) return "minpos magnitude";
      return "posit";
    }
    case Family::Fixed: {
      int drop = 64 - f.nbits;
      int64_t i = static_cast<int64_t>(code << drop) >> drop;
      return fmt::format("I = {}, value I * 2^-{}", i, f.frac_bits);
    }
  }
  return "";
}

Dyadic ulp_at(const Format& f, double r) {
  switch (f.family) {
    case Family::Ieee: {
      if (r == 0) return Dyadic::from_double(f.min_positive);
      int e = exact_log2(emu::normalized(exact_from_double(r)));
      return Dyadic::from_u128(false, 1, std::max(e, f.emin) - f.man_bits);
    }
    case Family::Posit: {
      if (r == 0) return Dyadic::from_double(f.min_positive);
      double magnitude = r < 0 ? -r : r;
      uint64_t code = 0;
      posit_encode(f, magnitude, &code);
      double other = code < posit_nar(f.nbits) - 1 ? posit_decode(f, code + 1) : posit_decode(f, code - 1);
      Dyadic d = Dyadic::from_double(other) - Dyadic::from_double(magnitude);
      d.negative = false;
      return d;
    }
    case Family::Fixed:
      return Dyadic::from_u128(false, 1, -f.frac_bits);
  }
  return Dyadic{};
}

std::string ulp_error(const Format& f, double rounded, const Exact& exact) {
  if (exact.kind == Exact::NaN) return "n/a (the exact result is NaN)";
  if (is_nan(rounded))
    return exact.kind == Exact::Inf ? "n/a (the exact result is Inf; the format has no Inf)"
                                    : "n/a (the result overflows to NaN)";
  if (is_inf(rounded))
    return exact.kind == Exact::Inf ? "n/a (the exact result is Inf)" : "n/a (overflow to Inf)";
  if (exact.kind == Exact::Inf) return "n/a (the exact result is Inf; it saturated)";
  Dyadic r = Dyadic::from_double(rounded);
  Dyadic lo, hi;  // rounded - exact lies in [lo, hi] (open at both ends when sticky)
  if (exact.kind == Exact::Zero) {
    lo = hi = r;
  } else {
    Dyadic v1 = Dyadic::from_u128(exact.negative, exact.sig, exact.exp);
    lo = hi = r - v1;
    if (exact.sticky) {
      Dyadic v2 = v1 + Dyadic::from_u128(exact.negative, 1, exact.exp);
      hi = r - v2;
      if (compare(lo, hi) > 0) std::swap(lo, hi);
    }
  }
  Dyadic ulp = ulp_at(f, rounded);
  if (is_power_of_two(ulp)) {
    Dyadic u = normalized(ulp);
    lo = scale2(lo, -u.exp);
    hi = scale2(hi, -u.exp);
    return compare(lo, hi) == 0 ? decimal(lo) : decimal_between(lo, hi);
  }
  return fmt::format("~{:.6g}", approx_double(hi) / approx_double(ulp));
}

}  // namespace emu::calc
