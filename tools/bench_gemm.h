// `emutrain bench gemm`: GMAC/s of mac_gemm (backends/cpu/gemm.h) under common
// policies next to OpenBLAS SGEMM measured in the same run (docs/gemm.md).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

#include "numerics/mac.h"

namespace emu::cli {

struct BenchGemmOptions {
  int64_t m = 0, n = 0, k = 0;  // 0: the device's default size (cpu 512, cuda 4096, cuda-host 128)
  std::string device = "cpu";   // cpu: mac_gemm vs OpenBLAS; cuda / cuda-host: the backend's gemm op
  int threads = 0;              // 0: hardware concurrency
  double min_time = 0.5;        // seconds of timed runs per policy (at least 3 runs; the best counts)
  bool generic = false;         // also time the generic path (slow)
  uint64_t seed = 1;
};

// The benchmark itself. If OPENBLAS_CORETYPE is unset it first re-executes the
// process with a core type that this CPU can run (SkylakeX with AVX-512,
// Haswell with AVX2), because OpenBLAS 0.3.21 does not recognise recent CPUs
// and would fall back to a slow generic kernel, flattering the ratio.
int run_bench_gemm(const BenchGemmOptions& opts, std::ostream& out);

// The policy of one bench row: mul and acc as named ("exact": exact products),
// out and acc_outer binary32.
MacPolicy bench_gemm_policy(const char* mul, const char* acc);

// --device cuda or cuda-host (tools/bench_gemm_device.cpp): the CUDA backend's
// gemm op on device tensors under the same policies, next to cuBLAS SGEMM with
// TF32 off timed in the same run (cuda only; cuda-host has no native baseline
// and is timed for information).
int run_bench_gemm_device(const BenchGemmOptions& opts, std::ostream& out);

}  // namespace emu::cli
