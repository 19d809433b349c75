// A per-op profile of any backend: OpProfiler forwards every op of the op list
// (core/backend.h) to the backend it wraps and adds the op's wall time to a
// table. `emutrain bench train` puts one in front of the training device.
//
// On a GPU an op only queues kernels, so the profiler waits for the device
// (`sync`) before and after each op: the times are the ops' own, at the cost
// of exposing each launch's latency (a few microseconds per op), which the
// unprofiled step time does not pay. Nested calls (an op that runs another op
// through the backend) are not double counted: only the outermost call counts.
// Only the thread that made the profiler is timed (the training loop); ops that
// data-loader threads run (building batches on the CPU) pass through untimed.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

#include "core/backend.h"

namespace emu::cli {

class OpProfiler final : public Backend {
 public:
  struct Entry {
    int64_t calls = 0;
    double seconds = 0;
  };

  OpProfiler(Backend& inner, std::function<void()> sync) : inner_(inner), sync_(std::move(sync)) {}

  const char* name() const override { return inner_.name(); }
  Device device() const override { return inner_.device(); }
  bool supports(Op op, Family family) const override { return inner_.supports(op, family); }

  void reset() { entries_ = {}; }
  const Entry& entry(Op op) const { return entries_[static_cast<size_t>(op)]; }

#define EMU_PROFILED_OP(name, params, args) \
  void name params override {               \
    Scope scope(*this, Op::name);           \
    inner_.name args;                       \
  }
  EMU_BACKEND_OPS(EMU_PROFILED_OP)
#undef EMU_PROFILED_OP

 private:
  using Clock = std::chrono::steady_clock;

  class Scope {
   public:
    Scope(OpProfiler& p, Op op)
        : p_(p), op_(op), timed_(std::this_thread::get_id() == p.owner_), outer_(timed_ && p.depth_++ == 0) {
      if (!outer_) return;
      p_.sync_();
      start_ = Clock::now();
    }
    ~Scope() {
      if (timed_) --p_.depth_;
      if (!outer_) return;
      p_.sync_();
      Entry& e = p_.entries_[static_cast<size_t>(op_)];
      ++e.calls;
      e.seconds += std::chrono::duration<double>(Clock::now() - start_).count();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    OpProfiler& p_;
    Op op_;
    bool timed_, outer_;
    Clock::time_point start_;
  };

  Backend& inner_;
  std::function<void()> sync_;
  std::thread::id owner_ = std::this_thread::get_id();
  int depth_ = 0;
  std::array<Entry, kOpCount> entries_{};
};

}  // namespace emu::cli
