// The CPU thread pool: every parallel loop of the CPU backend (backends/cpu)
// and of the bulk rounding (numerics/bulk.h) runs on it. Host only.
//
//   parallel_for(n, threads, grain, body)  body(lo, hi) over [0, n) in contiguous parts
//   parallel_tasks(tasks, threads, body)   body(task) per task, threads take tasks from a counter
//   parallel_parts(parts, part)            part(0) .. part(parts - 1) side by side
//
// The pool's worker threads are created once, on the first loop that needs
// them (never more than the widest loop asked for), and sleep on a condition
// variable between loops, so a loop costs a wake-up, not a thread start, and
// idle workers take no CPU from other processes (numerics/parallel_for.cpp
// says why that rules out OpenMP's spinning threads here).
//
// Bits: the caller's arguments (n, threads, grain) fix the parts, never the
// number of threads that happen to run them, and each part writes its own
// outputs, so results do not depend on the pool or on scheduling; every loop
// keys its draws by element index, so they do not depend on the thread count
// either.
//
// Nesting and concurrent callers: a loop started inside a part of another
// loop runs its parts in turn in that thread, and so does a loop started by a
// second thread of the caller's own (a data loader worker) while the pool
// runs another thread's loop: nothing deadlocks and threads never multiply.
// The CPU ops split threads between outer and inner loops themselves
// (for_groups, run_heads), so only one level is ever wide.
#pragma once

#include <cstdint>
#include <functional>

namespace emu {

// The fewest elements of simple element-wise work worth a thread task of their
// own (tens of microseconds of work, well above waking a pool thread): the
// grain of the CPU backend's element-wise and row-wise loops and of the bulk
// loops over the scalar functions.
inline constexpr int64_t kGrainElements = int64_t{1} << 14;

// The thread count a `threads` argument means: threads > 0 as given, otherwise
// every hardware thread (std::thread::hardware_concurrency(), 1 if unknown).
int resolve_threads(int threads);

// How many worker threads the pool has started in this process so far (they
// are never ended): for tests and diagnostics.
int pool_workers();

// part(0) .. part(parts - 1), each once, side by side on the pool (part 0 in
// the calling thread); returns when all have returned. If parts throw, the
// first exception caught is rethrown here after every part has finished.
void parallel_parts(int parts, const std::function<void(int)>& part);

// body(lo, hi) over [0, n) in t = min(resolve_threads(threads), max(1, n / grain))
// contiguous parts, part w = [n * w / t, n * (w + 1) / t), side by side; with
// t = 1, body(0, n) in the calling thread.
void parallel_for(int64_t n, int threads, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// body(task) for every task in [0, tasks), on up to resolve_threads(threads)
// threads that take the next task from a shared counter, so that a thread
// slowed down by other processes does not hold the others up.
void parallel_tasks(int64_t tasks, int threads, const std::function<void(int64_t)>& body);

}  // namespace emu
