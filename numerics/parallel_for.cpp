// The CPU thread pool (numerics/parallel_for.h): worker threads created once,
// asleep on a condition variable between loops.
//
// Why not OpenMP: libgomp's idle threads spin after every loop (OMP_WAIT_POLICY
// is read from the environment only, before main). On a 2-core machine running
// two test processes, or a trainer next to its data loader, the spinning
// threads take the cores from the threads doing the work: two emulated
// training tests side by side took 13.9 s under libgomp against 6.4 s with
// sleeping threads (docs/engine.md, "Threads").
#include "numerics/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace emu {

namespace {

// True in the pool's workers, and in a caller while it runs its share of a
// loop: a loop started there runs its parts in turn in that thread.
thread_local bool tl_inside_loop = false;

// part(0) .. part(parts - 1) in turn; every part runs, the first exception is rethrown at the end.
void run_in_turn(int parts, const std::function<void(int)>& part) {
  std::exception_ptr error;
  for (int w = 0; w < parts; ++w) {
    try {
      part(w);
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

class Pool {
 public:
  // Runs the loop on the pool, or returns false when another thread's loop
  // holds it (the caller then runs its parts itself).
  int workers() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(workers_.size());
  }

  bool try_run(int parts, const std::function<void(int)>& part) {
    std::unique_lock<std::mutex> owner(owner_, std::try_to_lock);
    if (!owner.owns_lock()) return false;
    std::unique_lock<std::mutex> lock(mutex_);
    grow(parts - 1);
    part_ = &part;
    parts_ = parts;
    claimed_ = 0;
    unfinished_.store(parts, std::memory_order_relaxed);
    error_ = nullptr;
    published_.store(++loop_id_, std::memory_order_release);
    for (int i = 1; i < parts; ++i) wake_.notify_one();
    tl_inside_loop = true;
    work(lock);  // the caller takes part 0 (it claims first) and whatever is left
    tl_inside_loop = false;
    if (unfinished_.load(std::memory_order_relaxed) != 0) {
      // The workers' last parts usually end within microseconds: watch for
      // that before sleeping, as the workers watch for the next loop. A sleep
      // and its wake-up are two system calls, each several microseconds in a
      // virtual machine (LeNet-5 runs hundreds of loops a step).
      lock.unlock();
      for (int i = 0; i < kSpins && unfinished_.load(std::memory_order_acquire) != 0; ++i) pause();
      lock.lock();
    }
    finished_.wait(lock, [&] { return unfinished_.load(std::memory_order_relaxed) == 0; });
    part_ = nullptr;
    std::exception_ptr error = error_;
    lock.unlock();
    if (error) std::rethrow_exception(error);
    return true;
  }

 private:
  // Claims and runs parts of the current loop until none is left; `lock` holds mutex_.
  void work(std::unique_lock<std::mutex>& lock) {
    while (claimed_ < parts_) {
      const int w = claimed_++;
      const std::function<void(int)>& part = *part_;
      lock.unlock();
      std::exception_ptr error;
      try {
        part(w);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error && !error_) error_ = error;
      if (unfinished_.fetch_sub(1, std::memory_order_release) == 1) finished_.notify_all();
    }
  }

  void worker() {
    tl_inside_loop = true;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (loop_id_ == seen) {
        // Loops often come in quick succession (an LSTM's steps, a layer's
        // ops): watch for the next one for a few microseconds before sleeping.
        lock.unlock();
        for (int i = 0; i < kSpins && published_.load(std::memory_order_acquire) == seen; ++i) pause();
        lock.lock();
      }
      wake_.wait(lock, [&] { return loop_id_ != seen && claimed_ < parts_; });
      seen = loop_id_;
      work(lock);
    }
  }

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
  }

  // At least `n` workers; threads are only ever added, never ended (the pool
  // lives as long as the process).
  void grow(int n) {
    while (static_cast<int>(workers_.size()) < n) {
      workers_.emplace_back([this] { worker(); });
      workers_.back().detach();
    }
  }

  std::mutex owner_;  // held by the thread whose loop the pool runs
  std::mutex mutex_;  // guards everything below
  std::condition_variable wake_, finished_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* part_ = nullptr;
  int parts_ = 0, claimed_ = 0;
  std::atomic<int> unfinished_{0};  // written under mutex_; the caller also watches it without
  uint64_t loop_id_ = 0;
  std::atomic<uint64_t> published_{0};  // loop_id_, readable without the mutex
  static constexpr int kSpins = 4000;   // about 20 to 100 microseconds of pause instructions
  std::exception_ptr error_;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: workers may still sleep on it at exit
  return *p;
}

}  // namespace

int resolve_threads(int threads) {
  if (threads > 0) return threads;
  const unsigned h = std::thread::hardware_concurrency();
  return h ? static_cast<int>(h) : 1;
}

int pool_workers() { return pool().workers(); }

void parallel_parts(int parts, const std::function<void(int)>& part) {
  if (parts <= 1) {
    if (parts == 1) part(0);
    return;
  }
  if (tl_inside_loop || !pool().try_run(parts, part)) run_in_turn(parts, part);
}

void parallel_for(int64_t n, int threads, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  const int64_t t =
      std::min<int64_t>(resolve_threads(threads), std::max<int64_t>(1, n / std::max<int64_t>(grain, 1)));
  if (t <= 1) {
    body(0, n);
    return;
  }
  parallel_parts(static_cast<int>(t), [&](int w) { body(n * w / t, n * (w + 1) / t); });
}

void parallel_tasks(int64_t tasks, int threads, const std::function<void(int64_t)>& body) {
  const int64_t t = std::min<int64_t>(resolve_threads(threads), tasks);
  if (t <= 1) {
    for (int64_t i = 0; i < tasks; ++i) body(i);
    return;
  }
  std::atomic<int64_t> next{0};
  parallel_parts(static_cast<int>(t), [&](int) {
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < tasks;) body(i);
  });
}

}  // namespace emu
