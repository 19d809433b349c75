// The two builds of every file in backends/cuda/ops/ (docs/host_executor.md):
// nvcc compiles them for the GPU into namespace emu::cuda, the host C++
// compiler compiles the same text against the host executor
// (backends/cuda/host/executor.h) into namespace emu::cuda_host. Both builds
// live in one program without clashing, and `device: cuda-host` runs exactly
// the kernels that `device: cuda` runs on a GPU.
#pragma once

#include "backends/cuda/launch.h"  // CUDA keywords and built-ins on the host, emu::gpu::launch

#if defined(__CUDACC__)
#define EMU_CUDA_NS cuda
#define EMU_CUDA_ON_GPU 1
#else
#define EMU_CUDA_NS cuda_host
#define EMU_CUDA_ON_GPU 0
#endif
