#include "tools/openblas_core.h"

#include <fmt/format.h>

#include <cstdlib>

namespace emu::cli {

int cpu_vector_level() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return 3;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 2;
  if (__builtin_cpu_supports("avx")) return 1;
  return 0;
}

int openblas_core_level(const std::string& core) {
  // OpenBLAS 0.3.x core names (driver/others/dynamic.c); unknown names count as SSE.
  for (const char* c : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (core == c) return 3;
  for (const char* c : {"Haswell", "Zen"})
    if (core == c) return 2;
  for (const char* c : {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller", "Excavator"})
    if (core == c) return 1;
  return 0;
}

const char* vector_level_name(int level) {
  static const char* const kNames[] = {"SSE", "AVX", "AVX2", "AVX-512"};
  return level >= 0 && level <= 3 ? kNames[level] : "?";
}

const char* openblas_best_core(int level) {
  static const char* const kCores[] = {nullptr, "Sandybridge", "Haswell", "SkylakeX"};
  return level >= 0 && level <= 3 ? kCores[level] : nullptr;
}

OpenBlasKernel judge_openblas_kernel(const std::string& core, const char* env_core) {
  OpenBlasKernel k;
  k.core = core;
  k.core_level = openblas_core_level(core);
  k.cpu_level = cpu_vector_level();
  k.forced = env_core != nullptr;
  k.older = k.core_level < k.cpu_level;
  if (k.older && k.forced) {
    k.warning = fmt::format(
        "warning: OPENBLAS_CORETYPE={} forces OpenBLAS's {} kernel on a CPU with {}: the baseline runs "
        "slower "
        "than it can and every ratio flatters emutrain. Unset it for this command (env -u OPENBLAS_CORETYPE "
        "-u OPENBLAS_L2_SIZE ...)",
        env_core, vector_level_name(k.core_level), vector_level_name(k.cpu_level));
  } else if (k.older) {
    k.warning = fmt::format(
        "warning: OpenBLAS chose its {} kernel ({}) on a CPU with {} (an OpenBLAS that does not know this "
        "CPU): every ratio flatters emutrain; OPENBLAS_CORETYPE={} would run its {} kernel",
        vector_level_name(k.core_level), core, vector_level_name(k.cpu_level),
        openblas_best_core(k.cpu_level), vector_level_name(k.cpu_level));
  }
  return k;
}

}  // namespace emu::cli
