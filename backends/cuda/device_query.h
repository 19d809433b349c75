// Whether and which GPUs are there, and whether this binary has code for them,
// callable from plain C++ (no CUDA headers).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace emu {

// Number of CUDA devices; 0 when there is no driver, no device, or any other
// CUDA error. Never throws.
int cuda_device_count();

struct GpuInfo {
  int index = 0;
  std::string name;          // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;  // compute capability
  size_t memory = 0;         // bytes
  bool has_code = false;     // this binary's kernels can run on it (SASS for it, or PTX it can compile)
};

// Every visible GPU (empty without a driver or device). Never throws.
std::vector<GpuInfo> cuda_devices();

// The CUDA architectures this binary was built for, as CMake was given them
// ("90-real 90-virtual", or "native (86)" when resolved on the build machine).
std::string cuda_architectures_built();

// One line for a GPU this binary has no code for: the GPU, its compute
// capability, the architectures built and the CMake option that fixes it.
std::string missing_code_message(const GpuInfo& gpu);

}  // namespace emu
