// Makes the CUDA backend's device names known to core/device_select.h:
// "cuda-host" (always: the kernels on the CPU through the host executor) and,
// in a build with nvcc, "cuda" (a real GPU). Programs that offer these names
// (the emutrain tool, the tests) call this once at start.
#pragma once

namespace emu {

void register_cuda_devices();

}  // namespace emu
