// One binary32 operation rounded to nearest even, never fused into an FMA: the
// host build has -ffp-contract=off, the device spells the rounding out with the
// _rn intrinsics (exact IEEE operations, not approximations). Used wherever
// plain fp32 arithmetic stands for R_fp32 of the exact result.
#pragma once

#include "numerics/hd.h"

namespace emu::fp32 {

EMU_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
EMU_HD float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
EMU_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
EMU_HD float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace emu::fp32
