// The policy of the recurrent backward's bias gradients (core/backend_ops_recurrent.h:
// "dbias = plain sums (mul exact, p's acc and chunks) over the rows (n, t)"),
// one definition for the CPU reference (backends/cpu/recurrent_ops.cpp) and the
// CUDA kernels (backends/cuda/ops/recurrent.cu), which both run it as a gemm of
// a row of ones (1, N*T) with the gate gradients (N*T, cols).
#pragma once

#include "numerics/mac.h"

namespace emu {

// Every term is g * 1 with g a value of p.out (each gate gradient was rounded to
// it), so rounding the product to p.out changes nothing and gives the same bits
// as mul exact, while letting the gemm take the fast path of (p.out, acc). Under
// :sr that rounding would still draw: fp32 then, also exact. A plain sum has no
// multiplier, so no approximate-multiplier table either.
inline MacPolicy recurrent_bias_policy(const MacPolicy& p) {
  MacPolicy sum = p;
  sum.mul_exact = false;
  sum.mul = is_stochastic(p.out) ? Format{} : p.out;
  sum.lut = {};
  sum.split = SplitMul::None;  // nor a split scheme
  sum.fused = 0;               // a sum of docs/contract.md section 4.7: never fused (section 4.8)
  return sum;
}

}  // namespace emu
