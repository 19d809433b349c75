// A binary32 value that a micro-kernel multiplies by whole vectors, read from
// its packed operand by each instruction that uses it (an AVX-512 embedded
// broadcast, `vmulps m32{1to16}` and `vfmadd231ps m32{1to16}`), for the
// product forms of numerics/fast_round.h, which take it in place of a vector
// of equal lanes (their template parameter A).
//
// Why: the product-rounding forms use each A element twice per B vector (the
// multiply that finds the magic constant and the FMA), so the compiler loads
// it once into a register with a separate `vbroadcastss`. On AMD Zen 4 that
// instruction takes one of the two 512-bit vector pipes, as a multiply or an
// add does, while a broadcast folded into the instruction that reads it costs
// nothing: a throwaway loop of 8 independent vaddps and 8 vmulps ran in 8
// cycles with either folded into it, in 12 with 8 vbroadcastss beside them.
// The e6m6 normal form's 16 products a step of the 8 x 32 tile carried 8 of
// them next to 82 operations. GCC folds a broadcast only into a value's sole
// use, hence the inline assembly (the same instructions as the intrinsics,
// with the operand's address in place of a register).
//
// Elsewhere (AVX2, lane loops) it is the splat the forms took before.
#pragma once

#include "numerics/fast_round_lanes.h"

namespace emu::gemm_detail {

using ::emu::lane_fma;  // the lanes' own, beside the one below

struct BcastF {
  const float* p;  // the value, in memory for as long as the kernel runs
};

// a * v (binary32 multiply, RNE).
template <class V>
inline V operator*(BcastF a, V v) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64) {
    V r;
    __asm__("vmulps %1%{1to16%}, %2, %0" : "=v"(r) : "m"(*a.p), "v"(v));
    return r;
  }
#endif
  return splat<V>(*a.p) * v;
}

// a * b + c, rounded once (fused multiply-add).
template <class V>
inline V lane_fma(BcastF a, V b, V c) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64) {
    __asm__("vfmadd231ps %1%{1to16%}, %2, %0" : "+v"(c) : "m"(*a.p), "v"(b));
    return c;
  }
#endif
  return ::emu::lane_fma(splat<V>(*a.p), b, c);
}

}  // namespace emu::gemm_detail
