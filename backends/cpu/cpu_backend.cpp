#include "backends/cpu/cpu_backend.h"

namespace emu {

CpuBackend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

Backend& default_cpu_backend() { return cpu_backend(); }

}  // namespace emu
