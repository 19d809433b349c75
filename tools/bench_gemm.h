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

// The benchmark itself. OpenBLAS runs the kernel it picks for this CPU; only
// where that is below the CPU's vector level (an OpenBLAS that does not know the
// CPU) and OPENBLAS_CORETYPE is unset does the tool re-execute itself with the
// best core of that level. It reports the kernel that ran and warns when
// OPENBLAS_CORETYPE forces an older one (tools/openblas_core.h).
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
