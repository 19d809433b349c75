// Whether and which GPUs are there, callable from plain C++ (no CUDA headers).
#pragma once

namespace emu {

// Number of CUDA devices; 0 when there is no driver, no device, or any other
// CUDA error. Never throws.
int cuda_device_count();

}  // namespace emu
