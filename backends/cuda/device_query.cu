#include <cuda_runtime.h>

#include "backends/cuda/device_query.h"

namespace emu {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear, so later CUDA calls do not see it
    return 0;
  }
  return n;
}

}  // namespace emu
