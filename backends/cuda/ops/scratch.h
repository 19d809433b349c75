// Device scratch arrays of the op files: intermediate row values (sums,
// maxima, a loss's row terms) that live for one op.
#pragma once

#include <cstddef>

#include "backends/cuda/ops/allocator.h"

namespace emu::EMU_CUDA_NS {

// n zero-filled values of T from the caching allocator, back to the cache when
// the array goes. Every op runs on the backend's one stream, so a block reused
// by a later op is only written after the kernels queued here have read it: no
// synchronisation is needed at release.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : ptr_(static_cast<T*>(allocate_zeroed(n * sizeof(T)))) {}
  ~DeviceArray() { release(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return ptr_; }

 private:
  T* ptr_;
};

}  // namespace emu::EMU_CUDA_NS
