#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/ops/device_lut.h"
#include "backends/cuda/ops/runtime.h"

namespace emu::EMU_CUDA_NS {

#if EMU_CUDA_ON_GPU
namespace {

std::mutex& copies_mutex() {
  static std::mutex* m = new std::mutex;  // never destroyed: used by the exit hook
  return *m;
}
// host table -> device copy; never destroyed, for the same reason
std::unordered_map<const uint16_t*, const uint16_t*>& copies() {
  static auto* c = new std::unordered_map<const uint16_t*, const uint16_t*>;
  return *c;
}

// Frees the device copies at exit, before the CUDA runtime's teardown (as the
// allocator's cache, allocator.cu), so that a leak check reports none.
void free_copies_at_exit() {
  std::lock_guard<std::mutex> lock(copies_mutex());
  for (auto& [host, device] : copies()) raw_free(const_cast<uint16_t*>(device));
  copies().clear();
}

}  // namespace
#endif

MacPolicy with_device_lut(const MacPolicy& p) {
#if EMU_CUDA_ON_GPU
  if (!has_approx_mul(p.lut)) return p;
  std::lock_guard<std::mutex> lock(copies_mutex());
  const uint16_t*& copy = copies()[p.lut.entries];
  if (!copy) {
    const size_t bytes = sizeof(uint16_t) << (2 * p.lut.man_bits);  // 2^(2Y) entries
    void* device = raw_alloc(bytes);
    static const bool at_exit = std::atexit(free_copies_at_exit) == 0;
    (void)at_exit;
    copy_to_device(device, p.lut.entries, bytes);
    copy = static_cast<const uint16_t*>(device);
  }
  MacPolicy q = p;
  q.lut.entries = copy;
  return q;
#else
  return p;
#endif
}

}  // namespace emu::EMU_CUDA_NS
