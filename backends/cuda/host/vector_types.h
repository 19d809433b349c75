// CUDA's small vector types (float2, float4, int4, ...) and make_* functions
// for the host build, with CUDA's alignments (a float4 is 16-byte aligned, so
// vectorized loads through float4 pointers need the same alignment on both).
#pragma once

#include "backends/cuda/host/qualifiers.h"

#define EMU_HOSTEXEC_VEC2(T, name, align)          \
  struct __attribute__((aligned(align))) name##2 { \
    T x, y;                                        \
  };                                               \
  inline constexpr name##2 make_##name##2(T x, T y) { return name##2 {x, y}; }
#define EMU_HOSTEXEC_VEC3(T, name) \
  struct name##3 {                 \
    T x, y, z;                     \
  };                               \
  inline constexpr name##3 make_##name##3(T x, T y, T z) { return name##3 {x, y, z}; }
#define EMU_HOSTEXEC_VEC4(T, name, align)          \
  struct __attribute__((aligned(align))) name##4 { \
    T x, y, z, w;                                  \
  };                                               \
  inline constexpr name##4 make_##name##4(T x, T y, T z, T w) { return name##4 {x, y, z, w}; }

EMU_HOSTEXEC_VEC2(int, int, 8)
EMU_HOSTEXEC_VEC3(int, int)
EMU_HOSTEXEC_VEC4(int, int, 16)
EMU_HOSTEXEC_VEC2(unsigned int, uint, 8)
// uint3 and make_uint3 are in qualifiers.h (threadIdx's type).
EMU_HOSTEXEC_VEC4(unsigned int, uint, 16)
EMU_HOSTEXEC_VEC2(float, float, 8)
EMU_HOSTEXEC_VEC3(float, float)
EMU_HOSTEXEC_VEC4(float, float, 16)
EMU_HOSTEXEC_VEC2(double, double, 16)
EMU_HOSTEXEC_VEC2(long long, longlong, 16)
EMU_HOSTEXEC_VEC2(unsigned long long, ulonglong, 16)

#undef EMU_HOSTEXEC_VEC2
#undef EMU_HOSTEXEC_VEC3
#undef EMU_HOSTEXEC_VEC4
