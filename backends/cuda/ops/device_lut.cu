#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/ops/device_lut.h"
#include "backends/cuda/ops/runtime.h"

namespace emu::EMU_CUDA_NS {

MacPolicy with_device_lut(const MacPolicy& p) {
#if EMU_CUDA_ON_GPU
  if (!has_approx_mul(p.lut)) return p;
  static std::mutex mutex;
  static std::unordered_map<const uint16_t*, const uint16_t*> copies;  // host table -> device copy
  std::lock_guard<std::mutex> lock(mutex);
  const uint16_t*& copy = copies[p.lut.entries];
  if (!copy) {
    const size_t bytes = sizeof(uint16_t) << (2 * p.lut.man_bits);  // 2^(2Y) entries
    void* device = raw_alloc(bytes);
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
