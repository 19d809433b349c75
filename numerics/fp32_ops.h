// One binary32 operation (+ - * / sqrt) rounded to nearest even, never fused into an FMA: the
// host build has -ffp-contract=off, the device spells the rounding out with the
// _rn intrinsics (exact IEEE operations, not approximations). Used wherever
// plain fp32 arithmetic stands for R_fp32 of the exact result.
//
// A NaN result is the canonical quiet NaN 0x7fc00000, the NaN every rounding
// gives (docs/contract.md section 2.6), whatever the operands' NaNs: IEEE 754
// leaves the choice open, and the hardware choices differ (x86 returns one
// operand's NaN, and which one depends on the operand order the compiler
// picked for a commutative operation, vectorised or not; a GPU returns
// 0x7fffffff). So a plain fp32 result has the same bits on every backend and in
// every build, and the same bits as the general path (ElementArith).
#pragma once

#include "numerics/hd.h"

namespace emu::fp32 {

// r, or the canonical quiet NaN when r is a NaN.
EMU_HD float canonical(float r) { return r != r ? bits_float(0x7fc00000u) : r; }

EMU_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return canonical(__fadd_rn(a, b));
#else
  return canonical(a + b);
#endif
}
EMU_HD float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return canonical(__fsub_rn(a, b));
#else
  return canonical(a - b);
#endif
}
EMU_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return canonical(__fmul_rn(a, b));
#else
  return canonical(a * b);
#endif
}
EMU_HD float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return canonical(__fdiv_rn(a, b));
#else
  return canonical(a / b);
#endif
}
// IEEE squareRoot is correctly rounded too: the device's _rn square root, the
// host's builtin (sqrtss; no libm call whose result could differ).
EMU_HD float sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return canonical(__fsqrt_rn(a));
#else
  return canonical(__builtin_sqrtf(a));
#endif
}

}  // namespace emu::fp32
