// Element-wise numerics on the GPU: the same numerics/ functions as the CPU,
// run in device code, for the CPU-vs-GPU comparison of each function
// (tests/test_cuda_numerics.cpp).
// Plain C++ header: host code includes it without CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "numerics/format.h"

namespace emu::cuda {

// Key of the stochastic-rounding draws: element i uses
// philox_draw(seed, stream, first_index + i).
struct DrawKey {
  uint64_t seed = 0;
  uint64_t stream = 0;
  uint64_t first_index = 0;
};

enum class ArithOp { Quantize, Add, Sub, Mul, Div, Sqrt };

// a, b, out: (n) host arrays. out[i] = R_f(a[i] op b[i]) computed on the device
// (b unused for Quantize and Sqrt). For arithmetic, a and b must already be
// values of f. Throws std::runtime_error on CUDA errors.
void elementwise_on_device(ArithOp op, const Format& f, const float* a, const float* b, float* out, size_t n,
                           DrawKey key);

// The exact-mode non-linear functions of numerics/functions.h.
enum class FunctionOp { Exp, Log, Tanh, Sigmoid, Erf, Gelu, Silu, Rsqrt, Reciprocal, Sqrt };

// x: (n) -> y: (n), y[i] = fn(x[i]) computed on the device.
void function_on_device(FunctionOp fn, const float* x, float* y, size_t n);

// The same on the host (the CPU reference of the comparison).
float function_on_host(FunctionOp fn, float x);

// codes: (n) -> values (n): decode on the device.
void decode_on_device(const Format& f, const uint32_t* codes, float* values, size_t n);

}  // namespace emu::cuda
