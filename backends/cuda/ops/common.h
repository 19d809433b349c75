// Shared by the op files of the CUDA backend (both builds, backends/cuda/ops/target.h):
// tensor views as kernel arguments, the launch shape of element-wise loops, and
// the checks every op makes before it launches.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "backends/cuda/ops/runtime.h"
#include "backends/cuda/ops/view.h"
#include "core/tensor.h"

namespace emu::EMU_CUDA_NS {

inline KernelView view_of(const Tensor& t) {
  KernelView v;
  if (t.ndim() > kMaxViewDims)
    throw std::invalid_argument(fmt::format("{}: a view of {} dimensions (the cuda backend takes at most {})",
                                            current_op(), t.ndim(), kMaxViewDims));
  if (t.device() != Device::Cuda)
    throw std::invalid_argument(fmt::format("{}: a {} tensor of shape {} given to the cuda backend",
                                            current_op(), device_name(t.device()), shape_string(t.shape())));
  v.data = const_cast<float*>(t.device_data());
  v.numel = t.numel();
  v.nd = t.ndim();
  v.contiguous = t.is_contiguous();
  for (int d = 0; d < v.nd; ++d) {
    v.shape[d] = t.shape()[d];
    v.strides[d] = t.strides()[d];
  }
  return v;
}

// A contiguous device pointer of t (an argument check, not a conversion).
inline float* contiguous_data(const Tensor& t, const char* what) {
  if (!t.is_contiguous())
    throw std::invalid_argument(
        fmt::format("{}: {} must be contiguous (shape {})", current_op(), what, shape_string(t.shape())));
  return view_of(t).data;
}

// Element-wise loops: blocks of 256 threads striding over n elements; at most
// 4096 blocks (a thread then handles several elements). Which thread handles
// which element never changes a result: every element is computed alone.
constexpr unsigned kElementBlock = 256;
inline dim3 element_grid(int64_t n) {
  const int64_t blocks = (n + kElementBlock - 1) / kElementBlock;
  return dim3(static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 4096)));
}

}  // namespace emu::EMU_CUDA_NS

// for (int64_t i = first index of this thread; i < n; i += all threads)
#define EMU_GRID_STRIDE_LOOP(i, n)                                                       \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
