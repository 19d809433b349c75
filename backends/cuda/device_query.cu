#include <cuda_runtime.h>
#include <fmt/format.h>

#include "backends/cuda/device_query.h"

#ifndef EMUTRAIN_CUDA_ARCHITECTURES
#define EMUTRAIN_CUDA_ARCHITECTURES "unknown"
#endif

namespace emu {
namespace {

// Compiled like every kernel of the backend (same CMAKE_CUDA_ARCHITECTURES):
// if the runtime finds no image of it for a GPU, it finds none of theirs.
__global__ void code_probe_kernel() {}

bool probe_has_code(int device) {
  int previous = 0;
  cudaGetDevice(&previous);
  if (cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, code_probe_kernel);
  cudaGetLastError();  // clear cudaErrorNoKernelImageForDevice / InvalidDeviceFunction
  cudaSetDevice(previous);
  return status == cudaSuccess;
}

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear, so later CUDA calls do not see it
    return 0;
  }
  return n;
}

std::vector<GpuInfo> cuda_devices() {
  std::vector<GpuInfo> gpus;
  const int n = cuda_device_count();
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    GpuInfo g;
    g.index = i;
    g.name = prop.name;
    g.major = prop.major;
    g.minor = prop.minor;
    g.memory = prop.totalGlobalMem;
    g.has_code = probe_has_code(i);
    gpus.push_back(g);
  }
  return gpus;
}

std::string cuda_architectures_built() { return EMUTRAIN_CUDA_ARCHITECTURES; }

std::string missing_code_message(const GpuInfo& gpu) {
  return fmt::format(
      "this binary has no code for GPU {} ({}, compute capability {}.{}): it was built for CUDA "
      "architectures "
      "{}; rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{} (or =native on the machine with the GPU)",
      gpu.index, gpu.name, gpu.major, gpu.minor, cuda_architectures_built(), gpu.major, gpu.minor);
}

}  // namespace emu
