#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backends/cuda/cublas_reference.h"
#include "backends/cuda/ops/runtime.h"
#include "backends/cuda/shared_library.h"

namespace emu::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("cuBLAS baseline: ") + what + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS baseline: ") + what + " failed with status " +
                             std::to_string(s));
}

// The cuBLAS entry points the baseline calls, typed by cublas_v2.h's own declarations.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  std::string library, missing;  // the file loaded; the search or the absent symbol when unusable
  bool usable() const { return create && destroy && set_stream && set_math_mode && sgemm; }
};

// Loaded once per process: CUDA 13's cuBLAS (libcublas.so.13, as this build's headers).
const Cublas& cublas() {
  static const Cublas api = [] {
    Cublas c;
    static SharedLibrary lib("EMUTRAIN_CUBLAS", "libcublas.so.13", nvidia_library_folders());
    if (!lib.loaded()) {
      c.missing = "cuBLAS not found (" + lib.searched() + ")";
      return c;
    }
    c.library = lib.path();
    c.create = lib.symbol<decltype(c.create)>("cublasCreate_v2");
    c.destroy = lib.symbol<decltype(c.destroy)>("cublasDestroy_v2");
    c.set_stream = lib.symbol<decltype(c.set_stream)>("cublasSetStream_v2");
    c.set_math_mode = lib.symbol<decltype(c.set_math_mode)>("cublasSetMathMode");
    c.sgemm = lib.symbol<decltype(c.sgemm)>("cublasSgemm_v2");
    if (!c.usable()) c.missing = "cuBLAS at " + c.library + " lacks an entry point of the cuBLAS v2 API";
    return c;
  }();
  return api;
}

// Device buffer freed on every path.
struct Buffer {
  float* p = nullptr;
  explicit Buffer(size_t n) { check(cudaMalloc(&p, n * sizeof(float)), "cudaMalloc"); }
  ~Buffer() { cudaFree(p); }
};

}  // namespace

CublasTiming time_cublas_sgemm(int64_t M, int64_t N, int64_t K, const float* a, const float* b,
                               double min_time) {
  const Cublas& api = cublas();
  CublasTiming t;
  if (!api.usable()) {
    t.library = api.missing;
    return t;
  }
  t.found = true;
  t.library = api.library;
  Buffer da(static_cast<size_t>(M * K)), db(static_cast<size_t>(K * N)), dc(static_cast<size_t>(M * N));
  check(cudaMemcpy(da.p, a, static_cast<size_t>(M * K) * sizeof(float), cudaMemcpyHostToDevice), "upload A");
  check(cudaMemcpy(db.p, b, static_cast<size_t>(K * N) * sizeof(float), cudaMemcpyHostToDevice), "upload B");
  cublasHandle_t h = nullptr;
  check(api.create(&h), "cublasCreate");
  struct Handle {
    const Cublas& api;
    cublasHandle_t h;
    ~Handle() { api.destroy(h); }
  } guard{api, h};
  check(api.set_stream(h, stream()), "cublasSetStream");
  check(api.set_math_mode(h, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode(PEDANTIC)");
  const float one = 1.0f, zero = 0.0f;
  // Row-major C = A B is column-major C^T = B^T A^T.
  auto run = [&] {
    check(api.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                    static_cast<int>(K), &one, db.p, static_cast<int>(N), da.p, static_cast<int>(K), &zero,
                    dc.p, static_cast<int>(N)),
          "cublasSgemm");
  };
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  run();
  check(cudaStreamSynchronize(stream()), "warm-up");
  t.best = 1e300;
  double total = 0;
  while (t.runs < 3 || total < min_time) {
    check(cudaEventRecord(start, stream()), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop, stream()), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    t.best = std::min(t.best, ms * 1e-3);
    total += ms * 1e-3;
    if (++t.runs >= 10000) break;
  }
  t.mean = total / t.runs;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return t;
}

}  // namespace emu::cuda
