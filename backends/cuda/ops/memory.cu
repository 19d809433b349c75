// Tensor memory ops (core/backend_ops_memory.h) on the device: strided copy,
// fill, transfers, gradient accumulation and the optimizer's reductions.
#include <vector>

#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/scratch.h"
#include "core/op_checks.h"
#include "numerics/fp32_ops.h"
#include "numerics/hd.h"

namespace emu::EMU_CUDA_NS {
namespace {

// dst[e] = src[e] over the row-major elements e of both views.
__global__ void copy_kernel(KernelView src, KernelView dst) {
  EMU_GRID_STRIDE_LOOP(e, dst.numel) { dst.at(e) = src.at(e); }
}

__global__ void fill_kernel(KernelView y, float value) {
  EMU_GRID_STRIDE_LOOP(e, y.numel) { y.at(e) = value; }
}

// acc[e] = RN32(acc[e] + g[e]): one binary32 addition, never fused.
__global__ void accumulate_kernel(KernelView acc, KernelView g) {
  EMU_GRID_STRIDE_LOOP(e, acc.numel) { acc.at(e) = fp32::add(acc.at(e), g.at(e)); }
}

// One thread: the binary64 sum of squares in row-major order, continuing *sum
// (the order is the definition: core/backend_ops_memory.h).
__global__ void sum_squares_kernel(KernelView x, double* sum) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double s = *sum;
  for (int64_t e = 0; e < x.numel; ++e) {
    const double v = x.at(e);
#if EMU_CUDA_ON_GPU
    s = __dadd_rn(s, __dmul_rn(v, v));  // two roundings, never an FMA (the square is exact anyway)
#else
    s = s + v * v;
#endif
  }
  *sum = s;
}

// *count += the NaN and Inf elements (integer atomics: the order does not matter).
__global__ void count_nonfinite_kernel(KernelView x, unsigned long long* count) {
  EMU_GRID_STRIDE_LOOP(e, x.numel) {
    if ((float_bits(x.at(e)) & 0x7f800000u) == 0x7f800000u) atomicAdd(count, 1ull);
  }
}

KernelView contiguous_view(float* data, const Tensor& like) {
  KernelView v;
  v.data = data;
  v.numel = like.numel();
  return v;
}

bool same_storage(const Tensor& a, const Tensor& b) {
  return a.impl() && b.impl() && a.impl()->storage == b.impl()->storage;
}

}  // namespace

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  OpScope scope("copy");
  check_same_shape("copy", src, dst);
  const int64_t n = dst.numel();
  if (n == 0) return;
  const KernelView s = view_of(src), d = view_of(dst);
  if (s.data == d.data && src.strides() == dst.strides()) return;  // the same view
  // Views of one storage copy as if read first, like the CPU (a device memcpy of
  // overlapping ranges is undefined): through a scratch array.
  if (same_storage(src, dst)) {
    DeviceArray<float> tmp(static_cast<size_t>(n));
    const KernelView t = contiguous_view(tmp.get(), src);
    gpu::launch("copy_kernel", copy_kernel, element_grid(n), dim3(kElementBlock), 0, stream(), s, t);
    gpu::launch("copy_kernel", copy_kernel, element_grid(n), dim3(kElementBlock), 0, stream(), t, d);
    return;
  }
  if (s.contiguous && d.contiguous) {
    copy_on_device(d.data, s.data, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  gpu::launch("copy_kernel", copy_kernel, element_grid(n), dim3(kElementBlock), 0, stream(), s, d);
}

void CudaBackend::fill(Tensor& y, float value) {
  OpScope scope("fill");
  if (y.numel() == 0) return;
  const KernelView v = view_of(y);
  gpu::launch("fill_kernel", fill_kernel, element_grid(v.numel), dim3(kElementBlock), 0, stream(), v, value);
}

void CudaBackend::upload(const float* host, Tensor& dst) {
  OpScope scope("upload");
  const int64_t n = dst.numel();
  if (n == 0) return;
  const KernelView d = view_of(dst);
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  if (d.contiguous) {
    copy_to_device(d.data, host, bytes);
    return;
  }
  DeviceArray<float> tmp(static_cast<size_t>(n));
  copy_to_device(tmp.get(), host, bytes);
  gpu::launch("copy_kernel", copy_kernel, element_grid(n), dim3(kElementBlock), 0, stream(),
              contiguous_view(tmp.get(), dst), d);
}

void CudaBackend::download(const Tensor& src, float* host) {
  OpScope scope("download");
  const int64_t n = src.numel();
  if (n == 0) return;
  const KernelView s = view_of(src);
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  if (s.contiguous) {
    copy_to_host(host, s.data, bytes);
    return;
  }
  DeviceArray<float> tmp(static_cast<size_t>(n));
  gpu::launch("copy_kernel", copy_kernel, element_grid(n), dim3(kElementBlock), 0, stream(), s,
              contiguous_view(tmp.get(), src));
  copy_to_host(host, tmp.get(), bytes);
}

void CudaBackend::accumulate(Tensor& acc, const Tensor& g) {
  OpScope scope("accumulate");
  check_same_shape("accumulate", acc, g);
  if (acc.numel() == 0) return;
  const KernelView a = view_of(acc), v = view_of(g);
  gpu::launch("accumulate_kernel", accumulate_kernel, element_grid(a.numel), dim3(kElementBlock), 0, stream(),
              a, v);
}

void CudaBackend::sum_squares(const Tensor& x, double* sum) {
  OpScope scope("sum_squares");
  if (x.numel() == 0) return;
  DeviceArray<double> dev(1);
  copy_to_device(dev.get(), sum, sizeof(double));
  gpu::launch("sum_squares_kernel", sum_squares_kernel, dim3(1), dim3(1), 0, stream(), view_of(x), dev.get());
  copy_to_host(sum, dev.get(), sizeof(double));
}

void CudaBackend::count_nonfinite(const Tensor& x, int64_t* count) {
  OpScope scope("count_nonfinite");
  *count = 0;
  if (x.numel() == 0) return;
  DeviceArray<unsigned long long> dev(1);
  const KernelView v = view_of(x);
  gpu::launch("count_nonfinite_kernel", count_nonfinite_kernel, element_grid(v.numel), dim3(kElementBlock), 0,
              stream(), v, dev.get());
  unsigned long long c = 0;
  copy_to_host(&c, dev.get(), sizeof c);
  *count = static_cast<int64_t>(c);
}

}  // namespace emu::EMU_CUDA_NS
