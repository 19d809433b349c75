// cuBLAS SGEMM on the GPU: the native baseline that `emutrain bench gemm
// --device cuda` times in the same run as the emulated GEMM (GPU builds only).
#pragma once

#include <cstdint>

namespace emu::cuda {

struct CublasTiming {
  double best = 0;  // fastest run, seconds
  double mean = 0;  // mean run, seconds
  int runs = 0;
};

// C = A B in binary32, row-major A (M,K) and B (K,N) given on the host,
// uploaded once; TF32 tensor-core math off (CUBLAS_PEDANTIC_MATH: the IEEE
// binary32 products and sums of classic SGEMM, the fair baseline of an
// emulator). At least 3 runs and min_time seconds after one warm-up, each timed
// with CUDA events on the backend's stream. Throws std::runtime_error naming
// the cuBLAS or CUDA call that failed.
CublasTiming time_cublas_sgemm(int64_t M, int64_t N, int64_t K, const float* a, const float* b,
                               double min_time);

}  // namespace emu::cuda
