// Device memory, transfers and the stream of the CUDA backend, in both builds
// (backends/cuda/ops/target.h): the CUDA runtime on a GPU, host memory under
// the host executor. Every failure throws std::runtime_error naming the op that
// was running (OpScope) and CUDA's message.
#pragma once

#include <cstddef>
#include <string>

#include "backends/cuda/ops/target.h"

namespace emu::EMU_CUDA_NS {

// Names the running op in error messages for as long as it lives.
class OpScope {
 public:
  explicit OpScope(const char* op);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  const char* previous_;
};
const char* current_op();  // "" outside any op

// Throws "CUDA error in <op> (<what>): <message>".
[[noreturn]] void fail(const char* what, const std::string& message);

// Whether a device is there: a visible GPU (nvcc build), always (host build).
bool device_available(std::string* reason);
std::string device_description();

void* raw_alloc(size_t bytes);  // not zeroed
void raw_free(void* ptr);
void zero_fill(void* ptr, size_t bytes);  // on the stream
void copy_to_device(void* dst, const void* host, size_t bytes);
void copy_to_host(void* host, const void* src, size_t bytes);  // synchronises the stream
void copy_on_device(void* dst, const void* src, size_t bytes);
void synchronize();
// The backend's one stream (created on first use; nullptr on the host).
gpu::Stream stream();

}  // namespace emu::EMU_CUDA_NS
