// The CPU backend: the reference definition of every op, vectorised and
// threaded. Each op family lives in its own file (backends/cpu/*_ops.cpp).
#pragma once

#include <cstdint>
#include <functional>

#include "core/backend.h"
#include "numerics/parallel_for.h"

namespace emu {

class CpuBackend : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  Device device() const override { return Device::Cpu; }
  // The CPU reference runs every op for every format family.
  bool supports(Op, Family) const override { return true; }

  // Worker threads for the threaded ops (0: all hardware threads).
  int threads() const { return threads_; }
  void set_threads(int n) { threads_ = n; }

#define EMU_CPU_BACKEND_OP(name, params, args) void name params override;
  EMU_BACKEND_OPS(EMU_CPU_BACKEND_OP)
#undef EMU_CPU_BACKEND_OP

 private:
  int threads_ = 0;
};

CpuBackend& cpu_backend();

// The CPU ops run their parallel loops on the CPU thread pool:
// parallel_for / parallel_tasks of numerics/parallel_for.h.

}  // namespace emu
