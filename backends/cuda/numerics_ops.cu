// The element-wise numerics of numerics_ops.h on the GPU, through the device
// memory, transfers and launches of the CUDA backend (backends/cuda/ops/:
// scratch arrays from its caching allocator, its one stream).
#include "backends/cuda/numerics_ops.h"
#include "backends/cuda/ops/runtime.h"
#include "backends/cuda/ops/scratch.h"
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

constexpr unsigned kBlock = 256;

// Blocks of kBlock threads covering n elements (n > 0).
dim3 grid_for(size_t n) { return dim3(static_cast<unsigned>((n + kBlock - 1) / kBlock)); }

// n values of T: host -> device, device -> host (synchronises the stream).
template <class T>
void upload(const DeviceArray<T>& d, const T* host, size_t n) {
  copy_to_device(d.get(), host, n * sizeof(T));
}
template <class T>
void download(const DeviceArray<T>& d, T* host, size_t n) {
  copy_to_host(host, d.get(), n * sizeof(T));
}

}  // namespace

void elementwise_on_device(ArithOp op, const Format& f, const float* a, const float* b, float* out, size_t n,
                           DrawKey key) {
  if (n == 0) return;
  const DeviceArray<float> da(n), db(n), dout(n);
  upload(da, a, n);
  upload(db, b ? b : a, n);
  gpu::launch("elementwise_kernel", elementwise_kernel, grid_for(n), dim3(kBlock), 0, stream(), op, f,
              static_cast<const float*>(da.get()), static_cast<const float*>(db.get()), dout.get(), n, key);
  download(dout, out, n);
}

void function_on_device(FunctionOp fn, const float* x, float* y, size_t n) {
  if (n == 0) return;
  const DeviceArray<float> dx(n), dy(n);
  upload(dx, x, n);
  gpu::launch("function_kernel", function_kernel, grid_for(n), dim3(kBlock), 0, stream(), fn,
              static_cast<const float*>(dx.get()), dy.get(), n);
  download(dy, y, n);
}

float function_on_host(FunctionOp fn, float x) { return apply_function(fn, x); }

void decode_on_device(const Format& f, const uint32_t* codes, float* values, size_t n) {
  if (n == 0) return;
  const DeviceArray<uint32_t> dcodes(n);
  const DeviceArray<float> dvalues(n);
  upload(dcodes, codes, n);
  gpu::launch("decode_kernel", decode_kernel, grid_for(n), dim3(kBlock), 0, stream(), f,
              static_cast<const uint32_t*>(dcodes.get()), dvalues.get(), n);
  download(dvalues, values, n);
}

}  // namespace emu::cuda
