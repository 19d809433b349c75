// The mirror: a test-only backend that proves the engine's device audit on a
// machine without a GPU (docs/devices.md).
//
// It owns Device::Cuda: tensors of that device get host memory (a zero-filling
// allocator registered through Storage::set_cuda_allocator), so they are real
// device tensors to the engine and Tensor::data() on them throws. Every op of
// the op list (EMU_BACKEND_OPS) forwards to the CPU reference backend on CPU
// aliases of its tensors (Tensor::from_blob over the same memory), so results
// are the CPU's bits. Engine code that touches tensor memory directly throws;
// a tensor of another device handed to one of its ops (a host-made index or
// mask that never reached the device) is a std::logic_error naming the op.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "core/backend.h"

namespace emu::test {

class MirrorBackend : public Backend {
 public:
  const char* name() const override { return "mirror"; }
  Device device() const override { return Device::Cuda; }
  bool supports(Op op, Family family) const override { return default_cpu_backend().supports(op, family); }

#define EMU_MIRROR_DECLARE_OP(name, params, args) void name params override;
  EMU_BACKEND_OPS(EMU_MIRROR_DECLARE_OP)
#undef EMU_MIRROR_DECLARE_OP

  // How often `op` ran since the last reset (what a training step downloads, say).
  int64_t calls(Op op) const { return calls_[static_cast<size_t>(op)].load(); }
  void reset_calls();

 private:
  void note_call(Op op) { calls_[static_cast<size_t>(op)].fetch_add(1); }
  std::array<std::atomic<int64_t>, kOpCount> calls_{};
};

// The process's mirror, installed for Device::Cuda (allocator and backend) on
// first use and registered as the device provider "cuda-host", so that a
// recipe's `device: cuda-host` trains on it.
MirrorBackend& install_mirror();

}  // namespace emu::test
