// The state of one running block: its CUDA threads (each a fiber), what each
// waits for, and the built-in variables (threadIdx, blockIdx, blockDim,
// gridDim) the running thread reads.
//
// Everything is per OS thread (thread_local): a launch runs all its fibers on
// the OS thread that called launch(), so different OS threads may launch
// kernels at the same time without sharing state.
#pragma once

#include <ucontext.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "backends/cuda/host/errors.h"
#include "backends/cuda/host/fiber.h"
#include "backends/cuda/host/qualifiers.h"

namespace emu::hostexec::detail {

enum class ThreadState : uint8_t {
  NotStarted,  // no fiber yet; runnable
  Ready,       // suspended, runnable (released from a barrier or collective)
  AtBarrier,   // waiting in __syncthreads (or a variant)
  AtWarp,      // waiting in a warp collective
  Exited,
};

enum class BarrierOp : uint8_t { Sync, Count, And, Or };

enum class WarpOp : uint8_t {
  SyncWarp,
  ShflIdx,
  ShflUp,
  ShflDown,
  ShflXor,
  Ballot,
  Any,
  All,
  ReduceAddU,
  ReduceMinU,
  ReduceMaxU,
  ReduceMinI,
  ReduceMaxI,
  ReduceAnd,
  ReduceOr,
  ReduceXor,
};

inline const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::SyncWarp:
      return "__syncwarp";
    case WarpOp::ShflIdx:
      return "__shfl_sync";
    case WarpOp::ShflUp:
      return "__shfl_up_sync";
    case WarpOp::ShflDown:
      return "__shfl_down_sync";
    case WarpOp::ShflXor:
      return "__shfl_xor_sync";
    case WarpOp::Ballot:
      return "__ballot_sync";
    case WarpOp::Any:
      return "__any_sync";
    case WarpOp::All:
      return "__all_sync";
    case WarpOp::ReduceAddU:
      return "__reduce_add_sync";
    case WarpOp::ReduceMinU:
      return "__reduce_min_sync(unsigned)";
    case WarpOp::ReduceMaxU:
      return "__reduce_max_sync(unsigned)";
    case WarpOp::ReduceMinI:
      return "__reduce_min_sync(int)";
    case WarpOp::ReduceMaxI:
      return "__reduce_max_sync(int)";
    case WarpOp::ReduceAnd:
      return "__reduce_and_sync";
    case WarpOp::ReduceOr:
      return "__reduce_or_sync";
    case WarpOp::ReduceXor:
      return "__reduce_xor_sync";
  }
  return "?";
}

inline const char* barrier_op_name(BarrierOp op) {
  switch (op) {
    case BarrierOp::Sync:
      return "__syncthreads";
    case BarrierOp::Count:
      return "__syncthreads_count";
    case BarrierOp::And:
      return "__syncthreads_and";
    case BarrierOp::Or:
      return "__syncthreads_or";
  }
  return "?";
}

// One CUDA thread.
struct ThreadCtx {
  ucontext_t ctx;
  FiberStack stack;
  bool has_stack = false;
  bool cancel = false;  // set while the block is torn down after an error
  ThreadState state = ThreadState::NotStarted;
  uint3 idx{0, 0, 0};
  unsigned linear = 0;  // x + y*bx + z*bx*by; warp = linear / 32, lane = linear % 32
  // Where the thread waits (barrier or collective), for messages.
  const char* file = nullptr;
  int line = 0;
  // __syncthreads variants.
  BarrierOp barrier_op = BarrierOp::Sync;
  int barrier_in = 0, barrier_out = 0;
  // Warp collectives: every lane's inputs stay here until the collective
  // completes; the results are computed for all lanes at once.
  WarpOp warp_op = WarpOp::SyncWarp;
  unsigned mask = 0;
  unsigned value_bytes = 0;  // 4 or 8 for shuffles (a 64-bit shuffle is not a 32-bit one)
  uint64_t in = 0, out = 0;
  int arg = 0;  // source lane, delta or lane mask
  int width = 32;
};

// One block being run.
struct BlockRun {
  const char* kernel = nullptr;
  uint3 block_idx{0, 0, 0};
  dim3 block_dim, grid_dim;
  std::vector<ThreadCtx>* threads = nullptr;
  unsigned n = 0;                 // threads in the block
  unsigned live = 0;              // not exited
  unsigned at_barrier = 0;        // waiting in a __syncthreads now
  void (*body)(void*) = nullptr;  // runs the kernel with the launch's arguments
  void* body_arg = nullptr;
  std::exception_ptr error;  // first exception of any thread (kernel or executor check)

  ThreadCtx& thread(unsigned linear) { return (*threads)[linear]; }
  std::string where() const {
    return std::string("kernel ") + kernel + ", block " + coords(block_idx.x, block_idx.y, block_idx.z);
  }
};

// What the running fiber sees.
struct Current {
  BlockRun* block = nullptr;
  ThreadCtx* thread = nullptr;
  uint3 thread_idx{0, 0, 0};
  uint3 block_idx{0, 0, 0};
  dim3 block_dim, grid_dim;
  unsigned char* dynamic_shared = nullptr;
};
inline thread_local Current current;

// Thrown into a suspended fiber to unwind it when its block is abandoned
// (another thread threw). Not a std::exception, so kernel code catching
// std::exception does not swallow it.
struct FiberCancelled {};

inline ThreadCtx& running_thread() {
  if (!current.thread)
    throw LaunchError("a CUDA device function (barrier, warp collective) was called outside a kernel launch");
  return *current.thread;
}

// Suspends the running fiber until the scheduler resumes it; unwinds it if the
// block is being abandoned.
inline void suspend(ThreadCtx& t) {
  switch_to_scheduler(&t.ctx);
  if (t.cancel) throw FiberCancelled{};
}

inline const uint3& builtin_thread_idx() { return current.thread_idx; }
inline const uint3& builtin_block_idx() { return current.block_idx; }
inline const dim3& builtin_block_dim() { return current.block_dim; }
inline const dim3& builtin_grid_dim() { return current.grid_dim; }

}  // namespace emu::hostexec::detail

// CUDA's built-in variables: the running fiber's values.
#define threadIdx (::emu::hostexec::detail::builtin_thread_idx())
#define blockIdx (::emu::hostexec::detail::builtin_block_idx())
#define blockDim (::emu::hostexec::detail::builtin_block_dim())
#define gridDim (::emu::hostexec::detail::builtin_grid_dim())

// A device-side abort: ends the launch with LaunchError naming the thread.
[[noreturn]] inline void __trap() {
  using namespace emu::hostexec::detail;
  ThreadCtx& t = running_thread();
  throw emu::hostexec::LaunchError("__trap() in " + current.block->where() + ", thread " +
                                   coords(t.idx.x, t.idx.y, t.idx.z));
}
