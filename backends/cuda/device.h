// CUDA device plumbing shared by the backend's .cu files (CUDA headers only).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace emu::cuda {

// Throws std::runtime_error naming the call and CUDA's message.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
}

// An owning device array of T.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    if (n_) check(cudaMalloc(&data_, n_ * sizeof(T)), "cudaMalloc");
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* data() { return data_; }
  size_t size() const { return n_; }
  void upload(const T* host) {
    if (n_) check(cudaMemcpy(data_, host, n_ * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  void download(T* host) const {
    if (n_) check(cudaMemcpy(host, data_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  }

 private:
  size_t n_;
  T* data_ = nullptr;
};

// Blocks of 256 threads covering n elements.
inline unsigned grid_for(size_t n, unsigned block = 256) {
  return static_cast<unsigned>((n + block - 1) / block);
}

}  // namespace emu::cuda
