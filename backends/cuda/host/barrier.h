// __syncthreads and its counting variants: a barrier over the LIVE threads of
// the block (threads that exited no longer count, as on sm_70 and later).
// When every live thread waits, they must all wait at the same call site;
// otherwise the launch fails with "divergent __syncthreads" naming the sites.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/host/block.h"

namespace emu::hostexec::detail {

inline bool same_site(const ThreadCtx& a, const ThreadCtx& b) {
  return a.line == b.line && a.barrier_op == b.barrier_op && std::strcmp(a.file, b.file) == 0;
}

// Every live thread waits at a barrier: check they agree, compute the
// variants' result and make them runnable.
inline void release_barrier(BlockRun& b) {
  std::vector<ThreadCtx*> waiting;
  for (unsigned i = 0; i < b.n; ++i)
    if (b.thread(i).state == ThreadState::AtBarrier) waiting.push_back(&b.thread(i));
  // Group by call site (first-seen order of sites, thread ids ascending).
  std::vector<std::vector<unsigned>> groups;
  std::vector<ThreadCtx*> reps;
  for (ThreadCtx* t : waiting) {
    size_t g = 0;
    while (g < reps.size() && !same_site(*reps[g], *t)) ++g;
    if (g == reps.size()) {
      reps.push_back(t);
      groups.emplace_back();
    }
    groups[g].push_back(t->linear);
  }
  if (groups.size() > 1) {
    std::string msg = "divergent __syncthreads in " + b.where() + ":";
    for (size_t g = 0; g < groups.size(); ++g) {
      msg += (g ? "; threads " : " threads ") + id_ranges(groups[g]) + " at " +
             site(reps[g]->file, reps[g]->line);
      if (reps[g]->barrier_op != BarrierOp::Sync)
        msg += std::string(" (") + barrier_op_name(reps[g]->barrier_op) + ")";
    }
    throw LaunchError(msg);
  }
  int count = 0;
  for (ThreadCtx* t : waiting) count += t->barrier_in;
  int total = static_cast<int>(waiting.size());
  for (ThreadCtx* t : waiting) {
    switch (t->barrier_op) {
      case BarrierOp::Sync:
        t->barrier_out = 0;
        break;
      case BarrierOp::Count:
        t->barrier_out = count;
        break;
      case BarrierOp::And:
        t->barrier_out = count == total;
        break;
      case BarrierOp::Or:
        t->barrier_out = count > 0;
        break;
    }
    t->state = ThreadState::Ready;
  }
  b.at_barrier = 0;
}

// The running thread arrives at a barrier; returns when the barrier releases.
// Always suspends, even when this thread completes the barrier, so that the
// scheduler's order (not arrival order) decides who runs next.
inline int barrier_wait(BarrierOp op, int predicate, const char* file, int line) {
  ThreadCtx& t = running_thread();
  BlockRun& b = *current.block;
  if (t.cancel) throw FiberCancelled{};
  t.state = ThreadState::AtBarrier;
  t.file = file;
  t.line = line;
  t.barrier_op = op;
  t.barrier_in = predicate != 0;
  ++b.at_barrier;
  if (b.at_barrier == b.live) release_barrier(b);
  suspend(t);
  return t.barrier_out;
}

}  // namespace emu::hostexec::detail

// Macros so the call site (file:line) names the barrier in error messages.
#define __syncthreads()                                                                               \
  ((void)::emu::hostexec::detail::barrier_wait(::emu::hostexec::detail::BarrierOp::Sync, 1, __FILE__, \
                                               __LINE__))
#define __syncthreads_count(predicate)                                                                     \
  (::emu::hostexec::detail::barrier_wait(::emu::hostexec::detail::BarrierOp::Count, (predicate), __FILE__, \
                                         __LINE__))
#define __syncthreads_and(predicate)                                                                     \
  (::emu::hostexec::detail::barrier_wait(::emu::hostexec::detail::BarrierOp::And, (predicate), __FILE__, \
                                         __LINE__))
#define __syncthreads_or(predicate)                                                                     \
  (::emu::hostexec::detail::barrier_wait(::emu::hostexec::detail::BarrierOp::Or, (predicate), __FILE__, \
                                         __LINE__))
