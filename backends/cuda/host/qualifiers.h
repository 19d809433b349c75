// CUDA's keywords and launch-shape types for the host build of kernel sources
// (g++ as C++17, no CUDA headers; docs/host_executor.md).
//
// A kernel file compiled by g++ includes the executor before any CUDA header
// (standard headers may come before or after); the keywords become plain C++
// (or attributes), so the same source compiles for the GPU (nvcc) and for the
// CPU (this executor).
#pragma once

#if defined(__CUDACC__)
#error "backends/cuda/host/qualifiers.h is for the host build only (nvcc defines these keywords itself)"
#endif
// CUDA's crt/host_defines.h defines __shared__ and friends as nothing for
// non-CUDA compilers; once it is in, our definitions would be ignored or clash,
// and static __shared__ arrays would silently become per-thread.
#if defined(__HOST_DEFINES_H__) || defined(__CUDA_RUNTIME_H__) || defined(__shared__) || \
    defined(__global__) || defined(__device__)
#error \
    "a CUDA header (or another definition of the CUDA keywords) came before the host executor; include backends/cuda/host/executor.h first"
#endif

// Standard headers that spell GNU attributes with CUDA's keyword names
// (libstdc++'s shared_ptr uses __attribute__((__noinline__))) must be parsed
// before __noinline__ becomes a macro; their include guards keep later
// includes from seeing the macro.
#include <cstddef>
#include <cstdint>
#include <memory>

// Function qualifiers: every function is an ordinary host function.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))
// __constant__ data is an ordinary global (read-only by convention).
#define __constant__
// Static shared memory: one object per OS thread, shared by every fiber (CUDA
// thread) of the block that thread runs. Blocks run one after another, so the
// object is reused by the next block and keeps the previous block's values
// (on the GPU its content at block start is undefined). `extern __shared__`
// is not supported: use EMU_DYNAMIC_SHARED (backends/cuda/launch.h).
#define __shared__ static thread_local
// __restrict__ is a GCC keyword already.

// CUDA's uint3 (threadIdx, blockIdx) and dim3 (blockDim, gridDim, launch
// shapes: unspecified dimensions are 1).
struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

inline constexpr uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }

// CUDA's warpSize is a built-in int; 32 on every architecture this project targets.
constexpr int warpSize = 32;
