// The host executor: runs CUDA kernel sources on the CPU with CUDA semantics
// (docs/host_executor.md). A kernel file compiled by g++ includes this header
// (usually through backends/cuda/launch.h) before any CUDA header. Under nvcc
// it is empty: the real CUDA keywords and built-ins apply.
#pragma once

#if !defined(__CUDACC__)
#include "backends/cuda/host/atomics.h"           // atomicAdd ... atomicCAS, fences
#include "backends/cuda/host/barrier.h"           // __syncthreads and variants
#include "backends/cuda/host/block.h"             // threadIdx, blockIdx, blockDim, gridDim, __trap
#include "backends/cuda/host/float_intrinsics.h"  // __fadd_rn ... __fadd_rd, conversions, float min/max
#include "backends/cuda/host/intrinsics.h"        // __clz, __popc, __umulhi, bit casts, integer min/max
#include "backends/cuda/host/launch.h"            // emu::hostexec::launch, EMU_DYNAMIC_SHARED
#include "backends/cuda/host/qualifiers.h"        // keywords, dim3, uint3, warpSize
#include "backends/cuda/host/vector_types.h"      // float4, int2, ...
#include "backends/cuda/host/warp.h"              // __syncwarp, shuffles, votes, __activemask
#endif
