#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backends/cuda/ops/allocator.h"
#include "backends/cuda/ops/runtime.h"

namespace emu::EMU_CUDA_NS {
namespace {

// Size classes: multiples of 512 bytes up to 1 MiB, then multiples of 1 MiB,
// so a reused block wastes little and similar tensors share a class.
size_t size_class(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t{1} << 20;
  const size_t unit = bytes <= kLarge ? kSmall : kLarge;
  return (bytes + unit - 1) / unit * unit;
}

struct Cache {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> free_blocks;  // by size class
  std::unordered_map<void*, size_t> in_use;          // block -> size class
  size_t cached = 0, used = 0;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: tensors may be released during static destruction
  return *c;
}

// Returns the cached blocks at exit. Registered after the first raw_alloc, so
// after the CUDA runtime registered its own teardown, and therefore run before
// it: without it compute-sanitizer's leak check reports every cached block as
// leaked (55 blocks in the first GPU run, docs/gpu/2026-11-28-c9efc31-h200.md).
void empty_cache_at_exit() { empty_cache(); }

}  // namespace

void* allocate_zeroed(size_t bytes) {
  const size_t cls = size_class(bytes == 0 ? 1 : bytes);
  Cache& c = cache();
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free_blocks.find(cls);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      c.cached -= cls;
    }
  }
  if (!block) {
    block = raw_alloc(cls);
    static const bool at_exit = std::atexit(empty_cache_at_exit) == 0;
    (void)at_exit;
  }
  zero_fill(block, cls);
  std::lock_guard<std::mutex> lock(c.mutex);
  c.in_use[block] = cls;
  c.used += cls;
  return block;
}

void release(void* ptr) {
  if (!ptr) return;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.in_use.find(ptr);
  if (it == c.in_use.end()) return;  // not ours: never happens through Storage
  const size_t cls = it->second;
  c.in_use.erase(it);
  c.used -= cls;
  c.free_blocks[cls].push_back(ptr);
  c.cached += cls;
}

size_t cached_bytes() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().cached;
}
size_t used_bytes() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().used;
}

void empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& [cls, blocks] : c.free_blocks)
    for (void* b : blocks) raw_free(b);
  c.free_blocks.clear();
  c.cached = 0;
}

}  // namespace emu::EMU_CUDA_NS
