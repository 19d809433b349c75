#include "backends/cuda/device.h"
#include "backends/cuda/numerics_ops.h"
#include "numerics/functions.h"
#include "numerics/philox.h"
#include "numerics/round.h"

namespace emu::cuda {
namespace {

// a, b, out: (n); one thread per element.
__global__ void elementwise_kernel(ArithOp op, Format f, const float* a, const float* b, float* out, size_t n,
                                   DrawKey key) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  uint32_t rand = is_stochastic(f) ? philox_draw(key.seed, key.stream, key.first_index + i) : 0;
  double r = 0;
  switch (op) {
    case ArithOp::Quantize:
      r = round_value(f, a[i], rand);
      break;
    case ArithOp::Add:
      r = format_add(f, a[i], b[i], rand);
      break;
    case ArithOp::Sub:
      r = format_sub(f, a[i], b[i], rand);
      break;
    case ArithOp::Mul:
      r = format_mul(f, a[i], b[i], rand);
      break;
    case ArithOp::Div:
      r = format_div(f, a[i], b[i], rand);
      break;
    case ArithOp::Sqrt:
      r = format_sqrt(f, a[i], rand);
      break;
  }
  out[i] = static_cast<float>(r);
}

EMU_HD float apply_function(FunctionOp fn, float x) {
  switch (fn) {
    case FunctionOp::Exp:
      return fn_exp(x);
    case FunctionOp::Log:
      return fn_log(x);
    case FunctionOp::Tanh:
      return fn_tanh(x);
    case FunctionOp::Sigmoid:
      return fn_sigmoid(x);
    case FunctionOp::Erf:
      return fn_erf(x);
    case FunctionOp::Gelu:
      return fn_gelu(x);
    case FunctionOp::Silu:
      return fn_silu(x);
    case FunctionOp::Rsqrt:
      return fn_rsqrt(x);
    case FunctionOp::Reciprocal:
      return fn_reciprocal(x);
    case FunctionOp::Sqrt:
      return fn_sqrt(x);
  }
  return x;
}

// x: (n) -> y: (n)
__global__ void function_kernel(FunctionOp fn, const float* x, float* y, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = apply_function(fn, x[i]);
}

// codes: (n) -> values: (n)
__global__ void decode_kernel(Format f, const uint32_t* codes, float* values, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) values[i] = static_cast<float>(decode(f, codes[i]));
}

}  // namespace

void elementwise_on_device(ArithOp op, const Format& f, const float* a, const float* b, float* out, size_t n,
                           DrawKey key) {
  if (n == 0) return;
  DeviceArray<float> da(n), db(n), dout(n);
  da.upload(a);
  db.upload(b ? b : a);
  elementwise_kernel<<<grid_for(n), 256>>>(op, f, da.data(), db.data(), dout.data(), n, key);
  check(cudaGetLastError(), "elementwise_kernel launch");
  check(cudaDeviceSynchronize(), "elementwise_kernel");
  dout.download(out);
}

void function_on_device(FunctionOp fn, const float* x, float* y, size_t n) {
  if (n == 0) return;
  DeviceArray<float> dx(n), dy(n);
  dx.upload(x);
  function_kernel<<<grid_for(n), 256>>>(fn, dx.data(), dy.data(), n);
  check(cudaGetLastError(), "function_kernel launch");
  check(cudaDeviceSynchronize(), "function_kernel");
  dy.download(y);
}

float function_on_host(FunctionOp fn, float x) { return apply_function(fn, x); }

void decode_on_device(const Format& f, const uint32_t* codes, float* values, size_t n) {
  if (n == 0) return;
  DeviceArray<uint32_t> dcodes(n);
  DeviceArray<float> dvalues(n);
  dcodes.upload(codes);
  decode_kernel<<<grid_for(n), 256>>>(f, dcodes.data(), dvalues.data(), n);
  check(cudaGetLastError(), "decode_kernel launch");
  check(cudaDeviceSynchronize(), "decode_kernel");
  dvalues.download(values);
}

}  // namespace emu::cuda
