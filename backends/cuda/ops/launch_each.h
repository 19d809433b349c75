// Launch shapes of the op files beyond element_grid (common.h): one thread per
// item (an element, or a row of a row op), and one thread for a computation
// whose order is its definition (a loss's total over rows).
#pragma once

#include <cstdint>

#include "backends/cuda/ops/common.h"

namespace emu::EMU_CUDA_NS {

// kernel over n items, grid-stride (EMU_GRID_STRIDE_LOOP); nothing when n is 0
// (CUDA refuses an empty grid, and no item means no work).
template <class... P, class... A>
void launch_each(const char* name, void (*kernel)(P...), int64_t n, A... args) {
  if (n <= 0) return;
  gpu::launch(name, kernel, element_grid(n), dim3(kElementBlock), 0, stream(), args...);
}

// kernel on a single thread: sequential sums whose order the CPU fixes.
template <class... P, class... A>
void launch_single(const char* name, void (*kernel)(P...), A... args) {
  gpu::launch(name, kernel, dim3(1), dim3(1), 0, stream(), args...);
}

}  // namespace emu::EMU_CUDA_NS
