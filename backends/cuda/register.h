// Makes the CUDA backend's device names known to core/device_select.h:
// "cuda-host" (always: the kernels on the CPU through the host executor) and,
// in a build with nvcc, "cuda" (a real GPU). Programs that offer these names
// (the emutrain tool, the tests) call this once at start.
#pragma once

#include <string>

namespace emu {

void register_cuda_devices();

// Waits until every op queued on the device named `name` has finished: the
// GPU's stream for "cuda"; nothing for "cuda-host" and "cpu", whose ops return
// when done. Benchmarks time device work with it.
void synchronize_device(const std::string& name);

}  // namespace emu
