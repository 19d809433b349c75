// Which machine a run's `device:` name computes on (docs/devices.md).
//
//   cpu        the CPU reference backend (backends/cpu)
//   cuda       the CUDA backend on a real GPU; an error naming cuda-host when no GPU is visible
//   cuda-host  the CUDA backend's kernels run on the CPU by the host executor
//              (backends/cuda/host): slow, for proving kernels without a GPU
//
// Both cuda names give tensors of Device::Cuda. The CUDA library registers its
// providers (backends/cuda/register.h) from the program that links it; a build
// without CUDA knows only cpu.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/backend.h"

namespace emu {

struct DeviceProvider {
  std::string name;         // "cuda", "cuda-host"
  std::string description;  // printed when chosen, e.g. "NVIDIA H100 (sm_90), driver 13.0"
  // The backend for Device::Cuda; throws std::runtime_error with a one-line reason
  // (e.g. no GPU visible) when it cannot run here.
  std::function<Backend&()> activate;
};

void register_device_provider(DeviceProvider provider);

// The names a run may give: cpu and every registered provider.
std::vector<std::string> device_names();

// Makes `name` the backend of its device (cuda names register theirs for
// Device::Cuda) and returns the device. Throws std::runtime_error naming the
// unknown name and the known ones, or the provider's reason.
Device activate_device(const std::string& name);

// The description of the named device ("cpu: N threads", the provider's).
std::string device_description(const std::string& name);

}  // namespace emu
