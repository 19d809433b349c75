// Device-side checks of numerics/philox.h against cuRAND, callable from plain
// C++ (no CUDA headers here), so a host-compiled test can run them and skip
// when there is no GPU.
#pragma once

#include <string>

#include "backends/cuda/device_query.h"

namespace emu {

// Runs curand_init(seed, subsequence, offset) + curand() and emu::PhiloxStream /
// emu::philox_draw side by side in device code for a fixed set of positions
// (large seeds, subsequences across the 32-bit boundary, offsets across the
// 32-bit boundary, counters wrapping out of the low 64 bits), and the host
// PhiloxStream for the same positions. True when all agree word for word;
// otherwise false with the first mismatch or CUDA error in *why (if non-null).
// Requires a device (cuda_device_count() > 0).
bool cuda_philox_matches_curand(std::string* why);

}  // namespace emu
