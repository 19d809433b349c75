// Host+device portability for the numerics core.
//
// Every bit-level function in numerics/ is written once and compiled both by
// the host compiler (CPU backend, tools, tests) and by nvcc (CUDA kernels).
// EMU_HD marks them; nothing here may call libm or a CUDA math intrinsic, so
// both compilers produce the same bits (docs/contract.md section 7.3).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define EMU_HD __host__ __device__ inline
#else
#define EMU_HD inline
#endif

// EMU_HD for a large body on slow paths (exact rounding, a fused run's limbs):
// out of line in nvcc builds, one copy per kernel file instead of one inlined
// into every call site of every kernel. Inlining those bodies everywhere made
// nvcc several times slower on the kernel files (batchnorm.cu, conv.cu,
// layernorm.cu took minutes each; docs/cuda_kernels.md "Compile time"), and
// the fast paths never reach them. The host compiler inlines as it likes.
#if defined(__CUDACC__)
#define EMU_HD_OUTLINE __host__ __device__ __noinline__ inline
#else
#define EMU_HD_OUTLINE inline
#endif

namespace emu {

using u128 = unsigned __int128;

EMU_HD uint32_t float_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
EMU_HD float bits_float(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
EMU_HD uint64_t double_bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
EMU_HD double bits_double(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

// Count of leading zero bits; the argument must be nonzero.
EMU_HD int clz64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}
EMU_HD int clz128(u128 x) {
  uint64_t hi = static_cast<uint64_t>(x >> 64);
  return hi ? clz64(hi) : 64 + clz64(static_cast<uint64_t>(x));
}

// The lowest n bits set, 1 <= n <= 64.
EMU_HD uint64_t low_bits_mask(int n) { return n >= 64 ? ~0ull : (1ull << n) - 1; }

// Quiet NaN as binary32 and binary64 (positive, canonical payload).
EMU_HD double quiet_nan() { return bits_double(0x7ff8000000000000ull); }
EMU_HD double infinity(bool negative) {
  return bits_double(negative ? 0xfff0000000000000ull : 0x7ff0000000000000ull);
}
EMU_HD bool is_nan(double x) {
  uint64_t u = double_bits(x);
  return (u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (u & 0x000fffffffffffffull);
}
EMU_HD bool is_inf(double x) { return (double_bits(x) & ~(1ull << 63)) == 0x7ff0000000000000ull; }
EMU_HD bool sign_bit(double x) { return double_bits(x) >> 63; }
EMU_HD double with_sign(double magnitude, bool negative) {
  uint64_t u = double_bits(magnitude) & ~(1ull << 63);
  return bits_double(negative ? u | (1ull << 63) : u);
}

// sig * 2^exp as a binary64, exactly, for sig < 2^64. The caller guarantees the
// value lies on the binary64 grid (true for every format value); results of
// 2^1024 or more become infinity so that overflow checks can compare them.
EMU_HD double pow2_scale(uint64_t sig, int exp) {
  if (sig == 0) return 0.0;
  int top = 63 - clz64(sig);  // sig in [2^top, 2^(top+1))
  int e = top + exp;          // value in [2^e, 2^(e+1))
  if (e > 1023) return infinity(false);
  if (e >= -1022) {
    uint64_t mant = top <= 52 ? sig << (52 - top) : sig >> (top - 52);
    return bits_double((static_cast<uint64_t>(e + 1023) << 52) | (mant & ((1ull << 52) - 1)));
  }
  // Subnormal binary64: the grid is 2^-1074.
  int shift = exp + 1074;
  uint64_t mant = shift >= 0 ? sig << shift : sig >> -shift;
  return bits_double(mant);
}

// p + off, or null when p is null. An empty tensor's data is null, and
// null + off (off != 0) is undefined behaviour even when nothing is read
// through the result (UBSan's pointer-overflow check, docs/sanitize.md).
template <class T>
EMU_HD T* offset_or_null(T* p, int64_t off) {
  return p != nullptr ? p + off : p;
}

}  // namespace emu
