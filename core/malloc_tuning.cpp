#include "core/malloc_tuning.h"

#include <cstdlib>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace emu {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // 32 MiB is glibc's largest accepted M_MMAP_THRESHOLD (HEAP_MAX_SIZE / 2 on 64-bit).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace emu
