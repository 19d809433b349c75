#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "backends/cuda/ops/runtime.h"

#if EMU_CUDA_ON_GPU
#include <cuda_runtime.h>

#include "backends/cuda/device_query.h"
#endif

namespace emu::EMU_CUDA_NS {
namespace {

thread_local const char* t_op = "";

#if EMU_CUDA_ON_GPU
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) fail(what, cudaGetErrorString(status));
}
#endif

}  // namespace

OpScope::OpScope(const char* op) : previous_(t_op) { t_op = op; }
OpScope::~OpScope() { t_op = previous_; }
const char* current_op() { return t_op; }

void fail(const char* what, const std::string& message) {
  throw std::runtime_error(std::string("CUDA error in ") + (*t_op ? t_op : "the cuda backend") + " (" + what +
                           "): " + message);
}

#if EMU_CUDA_ON_GPU

bool device_available(std::string* reason) {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess || n == 0) {
    if (reason)
      *reason = status != cudaSuccess
                    ? std::string("no CUDA GPU visible (") + cudaGetErrorString(status) + ")"
                    : "no CUDA GPU visible";
    return false;
  }
  // A binary without code for this GPU would fail at the first launch with "no kernel image is
  // available"; say which GPU, which architectures were built and how to build for it instead.
  int device = 0;
  cudaGetDevice(&device);
  for (const GpuInfo& gpu : cuda_devices())
    if (gpu.index == device && !gpu.has_code) {
      if (reason) *reason = missing_code_message(gpu);
      return false;
    }
  return true;
}

std::string device_description() {
  int device = 0, driver = 0, runtime = 0;
  cudaDeviceProp prop{};
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
         "), driver " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) +
         ", runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
}

gpu::Stream stream() {
  static cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    check(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking), "cudaStreamCreate");
    return created;
  }();
  return s;
}

void* raw_alloc(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}
void raw_free(void* ptr) { cudaFree(ptr); }  // never throws: called from destructors
void zero_fill(void* ptr, size_t bytes) {
  check(cudaMemsetAsync(ptr, 0, bytes, stream()), "cudaMemsetAsync");
}
void copy_to_device(void* dst, const void* host, size_t bytes) {
  check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream()), "cudaMemcpyAsync H2D");
  synchronize();  // the host buffer may be gone when the call returns
}
void copy_to_host(void* host, const void* src, size_t bytes) {
  check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync D2H");
  synchronize();
}
void copy_on_device(void* dst, const void* src, size_t bytes) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()), "cudaMemcpyAsync D2D");
}
void synchronize() { check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); }

#else  // the host executor: device memory is host memory

bool device_available(std::string*) { return true; }
std::string device_description() {
  return "the CUDA kernels on the CPU through the host executor (backends/cuda/host)";
}
gpu::Stream stream() { return nullptr; }
void* raw_alloc(size_t bytes) {
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);  // cudaMalloc's alignment
  if (!p) fail("allocate", "out of host memory for " + std::to_string(bytes) + " bytes");
  return p;
}
void raw_free(void* ptr) { std::free(ptr); }
void zero_fill(void* ptr, size_t bytes) { std::memset(ptr, 0, bytes); }
void copy_to_device(void* dst, const void* host, size_t bytes) { std::memcpy(dst, host, bytes); }
void copy_to_host(void* host, const void* src, size_t bytes) { std::memcpy(host, src, bytes); }
void copy_on_device(void* dst, const void* src, size_t bytes) { std::memmove(dst, src, bytes); }
void synchronize() {}

#endif

}  // namespace emu::EMU_CUDA_NS
