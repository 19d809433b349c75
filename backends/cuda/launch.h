// Kernel launches written once for both builds of a kernel source: nvcc runs
// kernel<<<grid, block, shmem, stream>>> on the GPU; g++ (the host build, no
// CUDA headers) runs the same kernel on the CPU through the host executor
// (docs/host_executor.md). A kernel file includes it before any CUDA header.
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#include "backends/cuda/host/executor.h"
#endif

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#if defined(__CUDACC__)
// The block's dynamic shared memory as a `type*`. One byte array for every
// kernel of a file: a typed `extern __shared__ type name[]` per kernel would
// clash between kernels that declare the same name with different types.
#define EMU_DYNAMIC_SHARED(type, name)                                       \
  extern __shared__ __align__(16) unsigned char emu_dynamic_shared_bytes_[]; \
  type* name = reinterpret_cast<type*>(emu_dynamic_shared_bytes_)
#endif

// Both builds of a kernel file may be linked into one program. The inline
// namespace gives each build's emu::gpu functions their own symbols: a
// template such as set_max_dynamic_shared<float*, int> has the same
// signature in both builds but a different body, and one definition would
// otherwise replace the other at link time.
#if defined(__CUDACC__)
#define EMU_GPU_BUILD cuda_runtime
#else
#define EMU_GPU_BUILD host_executor
#endif

namespace emu::gpu {
inline namespace EMU_GPU_BUILD {

#if defined(__CUDACC__)
using Stream = cudaStream_t;
#else
using Stream = void*;  // the host executor runs launches synchronously
#endif

namespace detail {
// Both builds refuse an empty grid with the same message (the GPU would
// report only "invalid configuration argument").
inline void check_grid(const char* name, dim3 grid) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    throw std::runtime_error(std::string("launch of kernel ") + name + ": empty grid (" +
                             std::to_string(grid.x) + "," + std::to_string(grid.y) + "," +
                             std::to_string(grid.z) + "): callers must not launch zero blocks");
}
}  // namespace detail

// kernel<<<grid, block, shmem, stream>>>(args...); throws std::runtime_error
// "CUDA error in <name>: ..." when the launch fails (host build: LaunchError,
// derived from std::runtime_error, or the kernel's own exception).
template <class... P, class... A>
void launch(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, size_t shmem, Stream stream,
            A... args) {
  detail::check_grid(name, grid);
#if defined(__CUDACC__)
  kernel<<<grid, block, shmem, stream>>>(args...);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error in ") + name + ": " + cudaGetErrorString(err));
#else
  (void)stream;
  ::emu::hostexec::launch(name, kernel, grid, block, shmem, std::move(args)...);
#endif
}

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)
// in both builds (needed before launches with more than 48 KiB of dynamic shared memory).
template <class... P>
void set_max_dynamic_shared(void (*kernel)(P...), size_t bytes) {
#if defined(__CUDACC__)
  cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error in cudaFuncSetAttribute: ") + cudaGetErrorString(err));
#else
  ::emu::hostexec::set_max_dynamic_shared(kernel, bytes);
#endif
}

}  // namespace EMU_GPU_BUILD
}  // namespace emu::gpu
