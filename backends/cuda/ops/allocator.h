// The caching allocator behind Storage's device hook (core/tensor.h): freed
// blocks are kept by size class and handed out again, so a training step does
// not call cudaMalloc/cudaFree per tensor. Blocks come back zero-filled, as
// Storage requires.
#pragma once

#include <cstddef>

#include "backends/cuda/ops/target.h"

namespace emu::EMU_CUDA_NS {

void* allocate_zeroed(size_t bytes);
void release(void* ptr);
// Bytes held in the cache (free blocks) and in use; for tests and reports.
size_t cached_bytes();
size_t used_bytes();
// Returns every cached block to the runtime.
void empty_cache();

}  // namespace emu::EMU_CUDA_NS
