// Keep freed memory in the process for reuse instead of returning it to the
// system after every op.
//
// A training step allocates and frees the same large buffers again and again
// (activations, gradients, im2col blocks of up to 16 MiB). glibc serves blocks
// above M_MMAP_THRESHOLD (128 KiB at start) with fresh mmap pages and unmaps
// them on free, so every step paid a page fault per 4 KiB touched: a sixth of a
// ResNet-18 CPU step in the profile. Raising the threshold to its maximum
// (32 MiB on 64-bit) and the trim threshold keeps those blocks in the heap; the
// process's peak memory stays what it was, and no result changes.
//
// The CLI calls this at start. A program embedding the library may call it too;
// it changes only glibc's malloc parameters (nothing on other C libraries).
#pragma once

namespace emu {

void keep_freed_memory_for_reuse();

}  // namespace emu
