// CUDA's integer and bit intrinsics for the host build, with CUDA's results at
// the edges (__clz(0) == 32, __ffs(0) == 0, high halves of signed products).
// Defined once here; kernels call them by their CUDA names.
#pragma once

#include <cstring>

#include "backends/cuda/host/qualifiers.h"

namespace emu::hostexec::detail {
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

template <class To, class From>
inline To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}
}  // namespace emu::hostexec::detail

// Leading zeros of the 32/64-bit pattern; all bits for zero.
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
// 1-based position of the least significant set bit; 0 for zero.
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }

// Bit reversal: bit i moves to bit 31-i (63-i).
inline unsigned int __brev(unsigned int x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  return (x >> 16) | (x << 16);
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned int>(x))) << 32) |
         __brev(static_cast<unsigned int>(x >> 32));
}

// High halves of the full products (signed ones keep the sign: __mulhi(-1, 1) == -1).
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<emu::hostexec::detail::u128>(a) * b) >> 64);
}
inline long long __mul64hi(long long a, long long b) {
  return static_cast<long long>((static_cast<emu::hostexec::detail::i128>(a) * b) >> 64);
}

// Reinterpretations (bit patterns unchanged).
inline unsigned int __float_as_uint(float x) { return emu::hostexec::detail::bit_cast<unsigned int>(x); }
inline float __uint_as_float(unsigned int x) { return emu::hostexec::detail::bit_cast<float>(x); }
inline int __float_as_int(float x) { return emu::hostexec::detail::bit_cast<int>(x); }
inline float __int_as_float(int x) { return emu::hostexec::detail::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return emu::hostexec::detail::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return emu::hostexec::detail::bit_cast<double>(x); }

// Read-only cached load: an ordinary load on the host.
template <class T>
inline T __ldg(const T* p) {
  return *p;
}

// CUDA's integer min/max overloads (device code calls them unqualified); the
// mixed signed/unsigned ones compare as unsigned, as CUDA's do.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline unsigned int min(int a, unsigned int b) { return min(static_cast<unsigned int>(a), b); }
inline unsigned int max(int a, unsigned int b) { return max(static_cast<unsigned int>(a), b); }
inline unsigned int min(unsigned int a, int b) { return min(a, static_cast<unsigned int>(b)); }
inline unsigned int max(unsigned int a, int b) { return max(a, static_cast<unsigned int>(b)); }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline unsigned long min(long a, unsigned long b) { return min(static_cast<unsigned long>(a), b); }
inline unsigned long max(long a, unsigned long b) { return max(static_cast<unsigned long>(a), b); }
inline unsigned long min(unsigned long a, long b) { return min(a, static_cast<unsigned long>(b)); }
inline unsigned long max(unsigned long a, long b) { return max(a, static_cast<unsigned long>(b)); }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline unsigned long long min(long long a, unsigned long long b) {
  return min(static_cast<unsigned long long>(a), b);
}
inline unsigned long long max(long long a, unsigned long long b) {
  return max(static_cast<unsigned long long>(a), b);
}
inline unsigned long long min(unsigned long long a, long long b) {
  return min(a, static_cast<unsigned long long>(b));
}
inline unsigned long long max(unsigned long long a, long long b) {
  return max(a, static_cast<unsigned long long>(b));
}
