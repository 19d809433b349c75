// Fibers for the host executor: one ucontext per CUDA thread, stacks from a
// reusable per-OS-thread pool (mmap'd, a PROT_NONE guard page below each so an
// overflow faults instead of corrupting a neighbour), and the switches
// announced to AddressSanitizer so it tracks which stack is live (without the
// announcements ASan reports false stack-buffer-overflows on fiber stacks).
#pragma once

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstddef>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define EMU_HOSTEXEC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_HOSTEXEC_ASAN 1
#endif
#endif
#if defined(EMU_HOSTEXEC_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace emu::hostexec::detail {

struct FiberStack {
  char* map = nullptr;  // start of the mapping (the guard page)
  size_t map_bytes = 0;
  char* lo = nullptr;  // lowest usable byte (the stack grows down toward it)
  size_t bytes = 0;
};

// Stacks are reused across threads, blocks and launches: a block of 1024
// threads needs 1024 live stacks, and mapping them anew per block would cost
// more than the kernel. Pages a fiber never touches stay unbacked.
class StackPool {
 public:
#if defined(EMU_HOSTEXEC_ASAN)
  static constexpr size_t kStackBytes = 1024 * 1024;  // ASan's redzones make frames larger
#else
  static constexpr size_t kStackBytes = 256 * 1024;
#endif

  StackPool() = default;
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool() {
    for (FiberStack& s : free_) munmap(s.map, s.map_bytes);
  }

  FiberStack acquire() {
    if (!free_.empty()) {
      FiberStack s = free_.back();
      free_.pop_back();
      return s;
    }
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    FiberStack s;
    s.map_bytes = kStackBytes + page;
    void* p = mmap(nullptr, s.map_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    s.map = static_cast<char*>(p);
    if (mprotect(s.map, page, PROT_NONE) != 0) {
      munmap(s.map, s.map_bytes);
      throw std::bad_alloc();
    }
    s.lo = s.map + page;
    s.bytes = kStackBytes;
    return s;
  }

  void release(FiberStack s) {
#if defined(EMU_HOSTEXEC_ASAN)
    // The finished fiber never returned from its outermost frames; clear their
    // shadow so the next fiber on this stack starts clean.
    __asan_unpoison_memory_region(s.lo, s.bytes);
#endif
    free_.push_back(s);
  }

 private:
  std::vector<FiberStack> free_;
};

inline StackPool& stack_pool() {
  static thread_local StackPool pool;
  return pool;
}

// The scheduler's context (the launching OS thread's own stack) and, under
// ASan, that stack's bounds as ASan reported them when a fiber first started.
struct SchedulerContext {
  ucontext_t ctx;
  const void* stack_bottom = nullptr;
  size_t stack_bytes = 0;
};
inline thread_local SchedulerContext scheduler_context;

// Scheduler -> fiber; returns when the fiber switches back.
inline void switch_to_fiber(ucontext_t* fiber, const FiberStack& stack) {
#if defined(EMU_HOSTEXEC_ASAN)
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, stack.lo, stack.bytes);
#else
  (void)stack;
#endif
  swapcontext(&scheduler_context.ctx, fiber);
#if defined(EMU_HOSTEXEC_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

// First thing a fiber's entry function does.
inline void fiber_started() {
#if defined(EMU_HOSTEXEC_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &scheduler_context.stack_bottom, &scheduler_context.stack_bytes);
#endif
}

// Fiber -> scheduler; returns when the scheduler resumes this fiber.
inline void switch_to_scheduler(ucontext_t* self) {
#if defined(EMU_HOSTEXEC_ASAN)
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, scheduler_context.stack_bottom, scheduler_context.stack_bytes);
#endif
  swapcontext(self, &scheduler_context.ctx);
#if defined(EMU_HOSTEXEC_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack, &scheduler_context.stack_bottom,
                                  &scheduler_context.stack_bytes);
#endif
}

// The fiber's last switch: its stack is never resumed (nullptr tells ASan to
// drop the fiber's fake stack).
[[noreturn]] inline void exit_to_scheduler() {
#if defined(EMU_HOSTEXEC_ASAN)
  __sanitizer_start_switch_fiber(nullptr, scheduler_context.stack_bottom, scheduler_context.stack_bytes);
#endif
  setcontext(&scheduler_context.ctx);
  __builtin_unreachable();
}

// Prepares `ctx` to run entry() on `stack`.
inline void make_fiber(ucontext_t* ctx, const FiberStack& stack, void (*entry)()) {
  getcontext(ctx);
  ctx->uc_stack.ss_sp = stack.lo;
  ctx->uc_stack.ss_size = stack.bytes;
  ctx->uc_link = nullptr;
  makecontext(ctx, entry, 0);
#if defined(EMU_HOSTEXEC_ASAN)
  // ASan's swapcontext interceptor clears the shadow of the target context's
  // uc_stack on every switch (128 KiB of shadow per switch here, and it drops
  // the redzones of the suspended fiber's frames). makecontext has consumed
  // uc_stack already and the switches never read it, so hide it: the
  // annotations above tell ASan about the stacks, release() clears a reused one.
  ctx->uc_stack.ss_sp = nullptr;
  ctx->uc_stack.ss_size = 0;
#endif
}

}  // namespace emu::hostexec::detail
