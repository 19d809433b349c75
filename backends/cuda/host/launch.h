// emu::hostexec::launch: runs a kernel's grid on the calling OS thread, block
// after block, each block's threads as fibers (scheduler.h), after checking
// the launch configuration against the GPU's limits (sm_90).
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/cuda/host/block.h"
#include "backends/cuda/host/errors.h"
#include "backends/cuda/host/schedule.h"
#include "backends/cuda/host/scheduler.h"

namespace emu::hostexec {

namespace detail {

constexpr size_t kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned long long kMaxGridDim[3] = {2147483647ull, 65535ull, 65535ull};
// Dynamic shared memory per block without and with the
// cudaFuncAttributeMaxDynamicSharedMemorySize opt-in (sm_90: 227 KiB).
constexpr size_t kDefaultMaxDynamicShared = 48 * 1024;
constexpr size_t kOptInMaxDynamicShared = 232448;

inline std::mutex max_dynamic_shared_mutex;
inline std::unordered_map<const void*, size_t> max_dynamic_shared;

inline size_t dynamic_shared_limit(const void* kernel) {
  std::lock_guard<std::mutex> lock(max_dynamic_shared_mutex);
  auto it = max_dynamic_shared.find(kernel);
  return it == max_dynamic_shared.end() ? kDefaultMaxDynamicShared : it->second;
}

inline void check_launch(const char* name, const void* kernel, dim3 grid, dim3 block, size_t shared) {
  std::string k = std::string("launch of kernel ") + name + ": ";
  if (current.block)
    throw LaunchError(k + "launched from inside kernel " + current.block->kernel +
                      " (dynamic parallelism is not emulated)");
  if (block.x == 0 || block.y == 0 || block.z == 0)
    throw LaunchError(k + "block " + coords(block.x, block.y, block.z) + " has a zero dimension");
  if (block.x > kMaxBlockDim[0] || block.y > kMaxBlockDim[1] || block.z > kMaxBlockDim[2])
    throw LaunchError(k + "block " + coords(block.x, block.y, block.z) +
                      " exceeds the per-dimension maximum (1024,1024,64)");
  unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (threads > kMaxThreadsPerBlock)
    throw LaunchError(k + "block " + coords(block.x, block.y, block.z) + " has " + std::to_string(threads) +
                      " threads, more than 1024");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    throw LaunchError(k + "empty grid " + coords(grid.x, grid.y, grid.z) + " (invalid configuration)");
  if (grid.x > kMaxGridDim[0] || grid.y > kMaxGridDim[1] || grid.z > kMaxGridDim[2])
    throw LaunchError(k + "grid " + coords(grid.x, grid.y, grid.z) +
                      " exceeds the maximum (2147483647,65535,65535)");
  size_t limit = dynamic_shared_limit(kernel);
  if (shared > limit) {
    std::string msg = k + std::to_string(shared) + " bytes of dynamic shared memory exceed the limit of " +
                      std::to_string(limit) + " bytes";
    if (limit < kOptInMaxDynamicShared)
      msg += " (raise it with set_max_dynamic_shared, i.e. cudaFuncSetAttribute, up to " +
             std::to_string(kOptInMaxDynamicShared) + ")";
    throw LaunchError(msg);
  }
}

struct AlignedDelete {
  void operator()(unsigned char* p) const { ::operator delete[](p, std::align_val_t{64}); }
};

// Runs every block of the grid in the schedule's order.
inline void run_grid(const Schedule& s, const char* name, dim3 grid, dim3 block, size_t shared,
                     void (*body)(void*), void* body_arg) {
  SplitMix64 rng(s.seed);
  uint64_t gx = grid.x, gy = grid.y;
  uint64_t total = gx * gy * grid.z;
  BlockOrder block_order(total, s.order, rng);
  unsigned n = block.x * block.y * block.z;
  std::vector<ThreadCtx> threads(n);
  std::vector<uint32_t> order;
  if (s.order != Order::Random) make_order(order, n, s.order, rng);
  // Dynamic shared memory, 64-byte aligned (CUDA guarantees 16).
  size_t buffer_bytes = shared ? shared : 16;
  std::unique_ptr<unsigned char[], AlignedDelete> buffer(
      static_cast<unsigned char*>(::operator new[](buffer_bytes, std::align_val_t{64})));

  BlockRun b;
  b.kernel = name;
  b.block_dim = block;
  b.grid_dim = grid;
  b.threads = &threads;
  b.n = n;
  b.body = body;
  b.body_arg = body_arg;
  struct ResetCurrent {
    ~ResetCurrent() { current = Current{}; }
  } reset;
  current.block_dim = block;
  current.grid_dim = grid;
  current.dynamic_shared = buffer.get();
  for (uint64_t i = 0; i < total; ++i) {
    uint64_t lin = block_order.at(i);
    b.block_idx = uint3{static_cast<unsigned>(lin % gx), static_cast<unsigned>((lin / gx) % gy),
                        static_cast<unsigned>(lin / (gx * gy))};
    // Shared memory starts undefined on the GPU; all-ones bytes (NaN floats,
    // -1 integers) make a read before any write visible.
    std::memset(buffer.get(), 0xff, buffer_bytes);
    run_block(b, s.order, rng, order);
  }
}

// The kernel's parameters built from the launch arguments by implicit
// conversion, as in a call (once per launch; every thread copies them).
template <class... P>
inline std::tuple<P...> convert_args(P... p) {
  return std::tuple<P...>(std::move(p)...);
}

inline unsigned char* dynamic_shared_base() {
  if (!current.dynamic_shared) throw LaunchError("EMU_DYNAMIC_SHARED used outside a kernel launch");
  return current.dynamic_shared;
}

}  // namespace detail

// Emulates cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes):
// later launches of `kernel` may use up to `bytes` of dynamic shared memory.
inline void set_max_dynamic_shared(const void* kernel, size_t bytes) {
  if (bytes > detail::kOptInMaxDynamicShared)
    throw LaunchError("set_max_dynamic_shared: " + std::to_string(bytes) +
                      " bytes exceed the opt-in maximum of " +
                      std::to_string(detail::kOptInMaxDynamicShared));
  std::lock_guard<std::mutex> lock(detail::max_dynamic_shared_mutex);
  detail::max_dynamic_shared[kernel] = bytes;
}
template <class... P>
inline void set_max_dynamic_shared(void (*kernel)(P...), size_t bytes) {
  set_max_dynamic_shared(reinterpret_cast<const void*>(kernel), bytes);
}

// Runs kernel<<<grid, block, dynamic_shared_bytes>>>(args...) on this OS
// thread under schedule s. Throws LaunchError for a configuration the GPU
// refuses or a misused barrier/collective; an exception thrown by the kernel
// leaves unchanged.
template <class... P, class... A>
inline void launch(Schedule s, const char* name, void (*kernel)(P...), dim3 grid, dim3 block,
                   size_t dynamic_shared_bytes, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A),
                "launch: the number of arguments differs from the kernel's parameters");
  detail::check_launch(name, reinterpret_cast<const void*>(kernel), grid, block, dynamic_shared_bytes);
  using Params = std::tuple<std::decay_t<P>...>;
  Params params = detail::convert_args<std::decay_t<P>...>(std::forward<A>(args)...);
  struct Call {
    void (*kernel)(P...);
    Params* params;
    static void run(void* self) {
      Call* c = static_cast<Call*>(self);
      std::apply(c->kernel, *c->params);
    }
  } call{kernel, &params};
  detail::run_grid(s, name, grid, block, dynamic_shared_bytes, &Call::run, &call);
}

// The same under the default schedule (set_default_schedule, else EMU_HOSTEXEC_ORDER).
template <class... P, class... A>
inline void launch(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, size_t dynamic_shared_bytes,
                   A&&... args) {
  launch(default_schedule(), name, kernel, grid, block, dynamic_shared_bytes, std::forward<A>(args)...);
}

}  // namespace emu::hostexec

// The block's dynamic shared memory as a `type*` (the nvcc definition is in
// backends/cuda/launch.h).
#define EMU_DYNAMIC_SHARED(type, name) \
  type* name = reinterpret_cast<type*>(::emu::hostexec::detail::dynamic_shared_base())
