// A heap array of a trivially constructible type left uninitialised, for the
// CPU ops' working buffers that are written in full before they are read
// (im2col blocks, packed GEMM operands, GEMM results before their scatter).
// std::vector<float>(n) would zero-fill them first: one more pass over up to
// 16 MiB per convolution call, which the profile of a ResNet-18 step showed as
// about a tenth of its time (with the page faults of fresh memory).
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>

namespace emu {

template <class T>
class UninitBuffer {
  static_assert(std::is_trivially_default_constructible_v<T>,
                "only types whose default is no initialisation");

 public:
  explicit UninitBuffer(size_t n) : data_(n ? new T[n] : nullptr), size_(n) {}  // new T[n]: default-init
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  std::unique_ptr<T[]> data_;
  size_t size_;
};

}  // namespace emu
