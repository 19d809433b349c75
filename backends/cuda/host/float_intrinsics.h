// CUDA's floating-point intrinsics with a named rounding for the host build.
//
// _rn operations are the plain IEEE operations (the host build has
// -ffp-contract=off, so none is fused); __fmaf_rn/__fma_rn are fused exactly
// once. Directed additions (_rd, _ru, _rz) are computed without touching the
// floating-point environment: the round-to-nearest sum s plus its exact error
// e (TwoSum) tell on which side of s the exact sum lies, and the result steps
// one ulp from s when rounding to nearest went the wrong way.
#pragma once

#include <cfloat>
#include <cmath>
#include <limits>

#include "backends/cuda/host/qualifiers.h"

inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __fmaf_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return __builtin_fma(a, b, c); }

namespace emu::hostexec::detail {

enum class Direction { Down, Up, TowardZero };

// a + b rounded in direction d, exactly (IEEE 754 directed rounding).
template <class T>
inline T add_directed(T a, T b, Direction d) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  constexpr T big = std::numeric_limits<T>::max();
  if (!std::isfinite(a) || !std::isfinite(b)) return a + b;  // inf and NaN are exact
  T s = a + b;
  if (std::isinf(s)) {
    // Overflow of finite operands: the exact sum lies beyond the largest finite
    // value, which directed rounding returns on the side toward zero.
    bool pos = s > 0;
    if (d == Direction::TowardZero) return pos ? big : -big;
    if (d == Direction::Down) return pos ? big : -inf;
    return pos ? inf : -big;
  }
  if (s == 0) {
    // An exact zero sum: +0 except in rounding toward -infinity, where a sum of
    // opposite-signed operands (or of a -0) is -0 (IEEE 754 section 6.3).
    if (d == Direction::Down && !(a == 0 && !std::signbit(a) && !std::signbit(b))) return -T(0);
    return s;
  }
  // TwoSum (Knuth): e is the exact error, a + b == s + e.
  T bb = s - a;
  T e = (a - (s - bb)) + (b - bb);
  if (e == 0) return s;
  bool exact_below = e < 0;  // the exact sum lies between s and its neighbour toward -inf
  switch (d) {
    case Direction::Down:
      return exact_below ? std::nextafter(s, -inf) : s;
    case Direction::Up:
      return exact_below ? s : std::nextafter(s, inf);
    case Direction::TowardZero:
      // |exact| < |s| when the error points toward zero.
      return (s > 0) == exact_below ? std::nextafter(s, T(0)) : s;
  }
  return s;
}

// x rounded to an integer value in direction d (nearest: ties to even), exactly
// and independent of the floating-point environment.
enum class IntRounding { Nearest, Down, Up, TowardZero };
template <class T>
inline T round_integral(T x, IntRounding r) {
  if (!std::isfinite(x)) return x;
  T t = std::trunc(x);
  switch (r) {
    case IntRounding::TowardZero:
      return t;
    case IntRounding::Down:
      return std::floor(x);
    case IntRounding::Up:
      return std::ceil(x);
    case IntRounding::Nearest: {
      T frac = x - t;  // exact: |frac| < 1 and x, t share the exponent range
      T half = T(0.5);
      if (std::fabs(frac) > half || (std::fabs(frac) == half && std::fmod(t, T(2)) != 0))
        return t + (x > 0 ? T(1) : T(-1));
      return t;
    }
  }
  return t;
}

// CUDA's float-to-integer conversions saturate: NaN gives 0, values beyond the
// range give its nearest end (PTX cvt to integer clamps by default).
template <class I, class T>
inline I to_int_saturated(T x, IntRounding r) {
  if (std::isnan(x)) return 0;
  T v = round_integral(x, r);
  // max + 1 (a power of two: 2^31, 2^32, 2^63), exactly representable in T.
  constexpr T upper = T(std::numeric_limits<I>::max() / 2 + 1) * T(2);
  if (v >= upper) return std::numeric_limits<I>::max();
  if (v < T(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  return static_cast<I>(v);
}

}  // namespace emu::hostexec::detail

inline float __fadd_rd(float a, float b) {
  return emu::hostexec::detail::add_directed(a, b, emu::hostexec::detail::Direction::Down);
}
inline float __fadd_ru(float a, float b) {
  return emu::hostexec::detail::add_directed(a, b, emu::hostexec::detail::Direction::Up);
}
inline float __fadd_rz(float a, float b) {
  return emu::hostexec::detail::add_directed(a, b, emu::hostexec::detail::Direction::TowardZero);
}
inline double __dadd_rd(double a, double b) {
  return emu::hostexec::detail::add_directed(a, b, emu::hostexec::detail::Direction::Down);
}
inline double __dadd_ru(double a, double b) {
  return emu::hostexec::detail::add_directed(a, b, emu::hostexec::detail::Direction::Up);
}
inline double __dadd_rz(double a, double b) {
  return emu::hostexec::detail::add_directed(a, b, emu::hostexec::detail::Direction::TowardZero);
}

// Clamp to [0, 1]; NaN gives 0 (CUDA's __saturatef).
inline float __saturatef(float x) {
  if (!(x > 0.0f)) return 0.0f;  // NaN, -0 and negatives
  return x > 1.0f ? 1.0f : x;
}

#define EMU_HOSTEXEC_CVT(name, I, T, mode)                                                          \
  inline I name(T x) {                                                                              \
    return emu::hostexec::detail::to_int_saturated<I>(x, emu::hostexec::detail::IntRounding::mode); \
  }
EMU_HOSTEXEC_CVT(__float2int_rn, int, float, Nearest)
EMU_HOSTEXEC_CVT(__float2int_rz, int, float, TowardZero)
EMU_HOSTEXEC_CVT(__float2int_rd, int, float, Down)
EMU_HOSTEXEC_CVT(__float2int_ru, int, float, Up)
EMU_HOSTEXEC_CVT(__float2uint_rn, unsigned int, float, Nearest)
EMU_HOSTEXEC_CVT(__float2uint_rz, unsigned int, float, TowardZero)
EMU_HOSTEXEC_CVT(__float2uint_rd, unsigned int, float, Down)
EMU_HOSTEXEC_CVT(__float2uint_ru, unsigned int, float, Up)
EMU_HOSTEXEC_CVT(__float2ll_rn, long long, float, Nearest)
EMU_HOSTEXEC_CVT(__float2ll_rz, long long, float, TowardZero)
EMU_HOSTEXEC_CVT(__double2int_rn, int, double, Nearest)
EMU_HOSTEXEC_CVT(__double2int_rz, int, double, TowardZero)
EMU_HOSTEXEC_CVT(__double2ll_rn, long long, double, Nearest)
EMU_HOSTEXEC_CVT(__double2ll_rz, long long, double, TowardZero)
#undef EMU_HOSTEXEC_CVT

// int/unsigned to float rounded to nearest: the host conversion rounds so.
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned int x) { return static_cast<float>(x); }

// CUDA's floating-point min/max overloads: fmin/fmax semantics (a NaN operand
// gives the other one).
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
inline double min(float a, double b) { return std::fmin(static_cast<double>(a), b); }
inline double max(float a, double b) { return std::fmax(static_cast<double>(a), b); }
inline double min(double a, float b) { return std::fmin(a, static_cast<double>(b)); }
inline double max(double a, float b) { return std::fmax(a, static_cast<double>(b)); }
