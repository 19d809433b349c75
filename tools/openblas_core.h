// Which OpenBLAS kernel a benchmark's baseline runs, and whether it is the best
// one this CPU can run.
//
// OpenBLAS (DYNAMIC_ARCH builds, as Debian's) picks a kernel ("core") for the
// CPU when it loads, unless OPENBLAS_CORETYPE names one. A machine that sets
// OPENBLAS_CORETYPE=Haswell for safety makes OpenBLAS run its AVX2 kernel on an
// AVX-512 CPU, about 1.7x slower, and every ratio against it flatters emutrain
// (docs/gemm.md); an OpenBLAS too old for a CPU may fall back to a generic SSE
// kernel by itself. Benchmarks report the kernel that ran and warn in both cases.
#pragma once

#include <string>

namespace emu::cli {

// Vector ISA levels: 0 SSE only, 1 AVX, 2 AVX2 + FMA, 3 AVX-512 (F, BW, DQ, VL).
int cpu_vector_level();                       // this CPU's
int openblas_core_level(const std::string&);  // of an OpenBLAS core name ("Haswell", "Zen", "SkylakeX", ...)
const char* vector_level_name(int level);     // "AVX-512", "AVX2", "AVX", "SSE"
// The core that OpenBLAS 0.3.x runs fastest at a level ("SkylakeX", "Haswell", "Sandybridge"), or null.
const char* openblas_best_core(int level);

// The verdict on the kernel that runs: `core` is OpenBLAS's core name,
// `env_core` the value of OPENBLAS_CORETYPE (null if unset).
struct OpenBlasKernel {
  std::string core;
  int core_level = 0, cpu_level = 0;
  bool forced = false;  // OPENBLAS_CORETYPE is set
  bool older = false;   // the core's level is below the CPU's
  std::string warning;  // empty when OpenBLAS runs a kernel of the CPU's level by its own choice
};
OpenBlasKernel judge_openblas_kernel(const std::string& core, const char* env_core);

}  // namespace emu::cli
