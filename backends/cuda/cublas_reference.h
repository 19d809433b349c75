// cuBLAS SGEMM on the GPU: the native baseline that `emutrain bench gemm
// --device cuda` times in the same run as the emulated GEMM (GPU builds only).
// cuBLAS is loaded at run time (backends/cuda/shared_library.h), not linked:
// the machine's CUDA toolkit or PyTorch install provides it, and a machine
// without it still runs the rest of the benchmark.
#pragma once

#include <cstdint>
#include <string>

namespace emu::cuda {

struct CublasTiming {
  bool found = false;   // false: cuBLAS could not be loaded; `library` says where it was looked for
  std::string library;  // the file loaded (or the search, when not found)
  double best = 0;      // fastest run, seconds
  double mean = 0;      // mean run, seconds
  int runs = 0;
};

// C = A B in binary32, row-major A (M,K) and B (K,N) given on the host,
// uploaded once; TF32 tensor-core math off (CUBLAS_PEDANTIC_MATH: the IEEE
// binary32 products and sums of classic SGEMM, the fair baseline of an
// emulator). At least 3 runs and min_time seconds after one warm-up, each timed
// with CUDA events on the backend's stream. Throws std::runtime_error naming
// the cuBLAS or CUDA call that failed; returns found = false when no cuBLAS
// library is there ($EMUTRAIN_CUBLAS names one explicitly).
CublasTiming time_cublas_sgemm(int64_t M, int64_t N, int64_t K, const float* a, const float* b,
                               double min_time);

}  // namespace emu::cuda
