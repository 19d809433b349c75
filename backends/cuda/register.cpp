#include "backends/cuda/register.h"

#include <stdexcept>

#include "core/device_select.h"

// The two builds of backends/cuda/ops declare the same names in two namespaces.
namespace emu::cuda_host {
Backend& activate();
std::string description();
}  // namespace emu::cuda_host
#ifdef EMUTRAIN_HAVE_CUDA
namespace emu::cuda {
Backend& activate();
std::string description();
void synchronize();
}  // namespace emu::cuda
#endif

namespace emu {

void register_cuda_devices() {
  register_device_provider(
      {"cuda-host", cuda_host::description(), []() -> Backend& { return cuda_host::activate(); }});
#ifdef EMUTRAIN_HAVE_CUDA
  register_device_provider({"cuda", "a CUDA GPU", []() -> Backend& { return cuda::activate(); }});
#else
  register_device_provider(
      {"cuda", "a CUDA GPU (not in this build)", []() -> Backend& {
         throw std::runtime_error(
             "device: cuda: this build has no CUDA backend (nvcc was not found at configure "
             "time); device: cuda-host runs the CUDA kernels on the CPU");
       }});
#endif
}

void synchronize_device(const std::string& name) {
#ifdef EMUTRAIN_HAVE_CUDA
  if (name == "cuda") cuda::synchronize();
#else
  (void)name;
#endif
}

}  // namespace emu
