// Runs one block: every CUDA thread is a fiber that runs until it blocks (a
// barrier or warp collective) or exits; the scheduler sweeps the threads in
// the schedule's order, resuming each runnable one, until all have exited.
// A sweep that finds nothing runnable while threads remain is a deadlock.
// An exception in any thread (a kernel's own check or an executor check)
// abandons the block: the other suspended fibers are unwound (destructors
// run, stacks go back to the pool) and the exception leaves launch().
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "backends/cuda/host/barrier.h"
#include "backends/cuda/host/block.h"
#include "backends/cuda/host/fiber.h"
#include "backends/cuda/host/schedule.h"
#include "backends/cuda/host/warp.h"

namespace emu::hostexec::detail {

// The running thread returned from the kernel.
inline void thread_exits(BlockRun& b, ThreadCtx& t) {
  t.state = ThreadState::Exited;
  --b.live;
  check_exit_against_collectives(b, t);
  // The exit may complete a barrier the remaining live threads wait at.
  if (b.live > 0 && b.at_barrier == b.live) release_barrier(b);
}

__attribute__((noinline)) inline void run_thread_body() {
  BlockRun& b = *current.block;
  ThreadCtx& t = *current.thread;
  try {
    b.body(b.body_arg);
    thread_exits(b, t);
  } catch (const FiberCancelled&) {
    // The block is being abandoned; the first error is already recorded.
  } catch (...) {
    if (!b.error) b.error = std::current_exception();
  }
  t.state = ThreadState::Exited;
}

// makecontext's entry: no locals here, the frame is abandoned by the last switch.
inline void fiber_entry() {
  fiber_started();
  run_thread_body();
  exit_to_scheduler();
}

inline void resume(ThreadCtx& t) {
  current.thread = &t;
  current.thread_idx = t.idx;
  if (t.state == ThreadState::NotStarted) {
    t.stack = stack_pool().acquire();
    t.has_stack = true;
    make_fiber(&t.ctx, t.stack, &fiber_entry);
    t.state = ThreadState::Ready;
  }
  switch_to_fiber(&t.ctx, t.stack);
  current.thread = nullptr;
  if (t.state == ThreadState::Exited && t.has_stack) {
    stack_pool().release(t.stack);
    t.has_stack = false;
  }
}

// Unwinds every suspended fiber of the block (after an error).
inline void abandon_block(BlockRun& b) {
  for (unsigned i = 0; i < b.n; ++i) {
    ThreadCtx& t = b.thread(i);
    if (t.state == ThreadState::Exited) continue;
    if (!t.has_stack) {
      t.state = ThreadState::Exited;
      continue;
    }
    t.cancel = true;
    resume(t);  // suspend() throws FiberCancelled; the fiber unwinds and exits
    if (t.has_stack) {
      // The kernel swallowed the cancellation and is suspended again: its
      // stack cannot be reused (it is left mapped rather than corrupted).
      t.has_stack = false;
      t.state = ThreadState::Exited;
    }
  }
}

inline std::string deadlock_message(BlockRun& b) {
  std::vector<std::string> what;
  std::vector<std::vector<unsigned>> ids;
  for (unsigned i = 0; i < b.n; ++i) {
    ThreadCtx& t = b.thread(i);
    std::string w;
    if (t.state == ThreadState::AtBarrier)
      w = std::string(barrier_op_name(t.barrier_op)) + " at " + site(t.file, t.line);
    else if (t.state == ThreadState::AtWarp)
      w = wait_desc(t);
    else
      continue;
    size_t g = 0;
    while (g < what.size() && what[g] != w) ++g;
    if (g == what.size()) {
      what.push_back(w);
      ids.emplace_back();
    }
    ids[g].push_back(i);
  }
  std::string msg = "deadlock in " + b.where() + ": no thread can run;";
  for (size_t g = 0; g < what.size(); ++g)
    msg += (g ? "; threads " : " threads ") + id_ranges(ids[g]) + " wait in " + what[g];
  return msg;
}

// Runs block b to completion. `order` holds the thread order for Forward and
// Reverse; Random draws a new permutation per sweep.
inline void run_block(BlockRun& b, Order o, SplitMix64& rng, std::vector<uint32_t>& order) {
  unsigned bx = b.block_dim.x, bxy = b.block_dim.x * b.block_dim.y;
  for (unsigned i = 0; i < b.n; ++i) {
    ThreadCtx& t = b.thread(i);
    t.state = ThreadState::NotStarted;
    t.cancel = false;
    t.has_stack = false;
    t.linear = i;
    t.idx = uint3{i % bx, (i / bx) % b.block_dim.y, i / bxy};
  }
  b.live = b.n;
  b.at_barrier = 0;
  b.error = nullptr;
  current.block = &b;
  current.block_idx = b.block_idx;
  try {
    while (b.live > 0) {
      if (o == Order::Random) make_order(order, b.n, o, rng);
      bool ran = false;
      for (uint32_t i : order) {
        ThreadCtx& t = b.thread(i);
        if (t.state != ThreadState::NotStarted && t.state != ThreadState::Ready) continue;
        resume(t);
        ran = true;
        if (b.error) std::rethrow_exception(b.error);
      }
      if (!ran) throw LaunchError(deadlock_message(b));
    }
  } catch (...) {
    abandon_block(b);
    throw;
  }
}

}  // namespace emu::hostexec::detail
