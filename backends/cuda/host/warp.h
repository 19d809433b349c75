// Warp collectives: __syncwarp, the four shuffles, votes (__ballot_sync,
// __any_sync, __all_sync), __reduce_*_sync and __activemask.
//
// Lanes are consecutive linear thread ids in groups of 32 (a partial last warp
// has fewer). A collective completes when every lane named in its mask waits
// at a collective of the same kind with the same mask; then all lanes'
// results are computed at once from the inputs they brought (a lane that runs
// on first cannot overwrite an input another lane still needs). Misuse the GPU
// leaves undefined is a LaunchError naming kernel, block, warp, lane and call
// site: a mask naming an exited lane, a lane beyond the warp or not the
// caller itself, lanes of one mask at different kinds of collective or with
// different masks, a shuffle width that is not a power of two in [1, 32].
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/host/block.h"

namespace emu::hostexec::detail {

struct WarpOf {
  unsigned warp, lane, base, size;  // base: linear id of lane 0; size: lanes in this warp
  unsigned valid() const { return size == 32 ? 0xffffffffu : (1u << size) - 1u; }
};

inline WarpOf warp_of(const BlockRun& b, const ThreadCtx& t) {
  WarpOf w;
  w.warp = t.linear / 32;
  w.lane = t.linear % 32;
  w.base = w.warp * 32;
  w.size = b.n - w.base < 32 ? b.n - w.base : 32;
  return w;
}

inline std::string lane_where(const BlockRun& b, const ThreadCtx& t) {
  return b.where() + ", warp " + std::to_string(t.linear / 32) + ", lane " + std::to_string(t.linear % 32);
}

inline std::string wait_desc(const ThreadCtx& t) {
  return std::string(warp_op_name(t.warp_op)) + (t.value_bytes == 8 ? " (64-bit)" : "") + " with mask " +
         hex(t.mask) + " at " + site(t.file, t.line);
}

inline bool same_collective(const ThreadCtx& a, const ThreadCtx& b) {
  return a.warp_op == b.warp_op && a.mask == b.mask && a.value_bytes == b.value_bytes;
}

inline bool is_shuffle(WarpOp op) {
  return op == WarpOp::ShflIdx || op == WarpOp::ShflUp || op == WarpOp::ShflDown || op == WarpOp::ShflXor;
}

// Source lane of a shuffle, as PTX shfl.sync computes it: the lane operand's
// low 5 bits, segments of `width` lanes, and the caller's own lane when the
// source falls outside the caller's segment (up: below it; down, xor: above).
inline unsigned shuffle_source(WarpOp op, unsigned lane, int arg, int width) {
  unsigned b = static_cast<unsigned>(arg) & 31u;
  unsigned w = static_cast<unsigned>(width);
  unsigned min_lane = lane & ~(w - 1);
  unsigned max_lane = min_lane | (w - 1);
  switch (op) {
    case WarpOp::ShflIdx:
      return min_lane | (b & (w - 1));
    case WarpOp::ShflUp:
      return lane >= min_lane + b ? lane - b : lane;
    case WarpOp::ShflDown:
      return lane + b <= max_lane ? lane + b : lane;
    case WarpOp::ShflXor:
      return (lane ^ b) <= max_lane ? (lane ^ b) : lane;
    default:
      return lane;
  }
}

// Every lane of `mask` waits at the same collective: compute all results.
inline void complete_collective(BlockRun& b, const WarpOf& w, unsigned mask) {
  auto lane_ctx = [&](unsigned l) -> ThreadCtx& { return b.thread(w.base + l); };
  uint64_t ballot = 0, sum = 0, all_and = ~0ull, all_or = 0, all_xor = 0;
  uint32_t umin = ~0u, umax = 0;
  int32_t imin = INT32_MAX, imax = INT32_MIN;
  for (unsigned l = 0; l < 32; ++l) {
    if (!(mask >> l & 1u)) continue;
    ThreadCtx& t = lane_ctx(l);
    uint32_t v = static_cast<uint32_t>(t.in);
    if (v) ballot |= 1ull << l;
    sum += v;
    all_and &= v;
    all_or |= v;
    all_xor ^= v;
    umin = v < umin ? v : umin;
    umax = v > umax ? v : umax;
    int32_t s = static_cast<int32_t>(v);
    imin = s < imin ? s : imin;
    imax = s > imax ? s : imax;
  }
  for (unsigned l = 0; l < 32; ++l) {
    if (!(mask >> l & 1u)) continue;
    ThreadCtx& t = lane_ctx(l);
    switch (t.warp_op) {
      case WarpOp::SyncWarp:
        t.out = 0;
        break;
      case WarpOp::ShflIdx:
      case WarpOp::ShflUp:
      case WarpOp::ShflDown:
      case WarpOp::ShflXor: {
        unsigned src = shuffle_source(t.warp_op, l, t.arg, t.width);
        // Reading a lane that does not take part is undefined on the GPU; the
        // executor gives the caller its own value (docs/host_executor.md).
        if (src >= w.size || !(mask >> src & 1u)) src = l;
        t.out = lane_ctx(src).in;
        break;
      }
      case WarpOp::Ballot:
        t.out = ballot;
        break;
      case WarpOp::Any:
        t.out = ballot != 0;
        break;
      case WarpOp::All:
        t.out = ballot == mask;
        break;
      case WarpOp::ReduceAddU:
        t.out = static_cast<uint32_t>(sum);
        break;
      case WarpOp::ReduceMinU:
        t.out = umin;
        break;
      case WarpOp::ReduceMaxU:
        t.out = umax;
        break;
      case WarpOp::ReduceMinI:
        t.out = static_cast<uint32_t>(imin);
        break;
      case WarpOp::ReduceMaxI:
        t.out = static_cast<uint32_t>(imax);
        break;
      case WarpOp::ReduceAnd:
        t.out = static_cast<uint32_t>(all_and);
        break;
      case WarpOp::ReduceOr:
        t.out = static_cast<uint32_t>(all_or);
        break;
      case WarpOp::ReduceXor:
        t.out = static_cast<uint32_t>(all_xor);
        break;
    }
    t.state = ThreadState::Ready;
  }
}

// The running thread arrives at a warp collective; returns its result.
inline uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t in, unsigned value_bytes, int arg,
                                int width, const char* file, int line) {
  ThreadCtx& t = running_thread();
  BlockRun& b = *current.block;
  if (t.cancel) throw FiberCancelled{};
  WarpOf w = warp_of(b, t);
  auto fail = [&](const std::string& what) {
    throw LaunchError(std::string(warp_op_name(op)) + " in " + lane_where(b, t) + " at " + site(file, line) +
                      ": " + what);
  };
  if (mask & ~w.valid())
    fail("mask " + hex(mask) + " names lanes beyond the warp's " + std::to_string(w.size) + " lanes");
  if (!(mask >> w.lane & 1u)) fail("mask " + hex(mask) + " does not include the calling lane");
  if (is_shuffle(op) && (width < 1 || width > 32 || (width & (width - 1)) != 0))
    fail("width " + std::to_string(width) + " is not a power of two in [1, 32]");
  t.warp_op = op;
  t.mask = mask;
  t.value_bytes = value_bytes;
  t.in = in;
  t.arg = arg;
  t.width = width;
  t.file = file;
  t.line = line;
  bool all_arrived = true;
  for (unsigned l = 0; l < w.size; ++l) {
    if (l == w.lane) continue;
    ThreadCtx& u = b.thread(w.base + l);
    bool named = mask >> l & 1u;
    if (named && u.state == ThreadState::Exited)
      fail("lane " + std::to_string(l) + " named in mask " + hex(mask) + " has exited");
    bool names_me = u.state == ThreadState::AtWarp && (u.mask >> w.lane & 1u);
    if ((named || names_me) && u.state == ThreadState::AtWarp && !same_collective(t, u))
      fail("lanes of one mask wait at different collectives: this lane at " + wait_desc(t) + "; lane " +
           std::to_string(l) + " at " + wait_desc(u));
    if (named && u.state != ThreadState::AtWarp) all_arrived = false;
  }
  t.state = ThreadState::AtWarp;
  if (all_arrived) complete_collective(b, w, mask);
  suspend(t);
  return t.out;
}

// The running thread exits: no lane may still wait for it.
inline void check_exit_against_collectives(BlockRun& b, const ThreadCtx& t) {
  WarpOf w = warp_of(b, t);
  for (unsigned l = 0; l < w.size; ++l) {
    const ThreadCtx& u = b.thread(w.base + l);
    if (u.state == ThreadState::AtWarp && (u.mask >> w.lane & 1u))
      throw LaunchError("lane " + std::to_string(w.lane) + " exited while " + lane_where(b, u) +
                        " waits for it in " + wait_desc(u));
  }
}

template <class T>
inline T shuffle(WarpOp op, unsigned mask, T var, int arg, int width, const char* file, int line) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shuffles move 32- or 64-bit values");
  uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  uint64_t r = warp_collective(op, mask, bits, sizeof(T), arg, width, file, line);
  T out;
  std::memcpy(&out, &r, sizeof(T));
  return out;
}

inline uint32_t vote(WarpOp op, unsigned mask, uint32_t v, const char* file, int line) {
  return static_cast<uint32_t>(warp_collective(op, mask, v, 4, 0, 32, file, line));
}

}  // namespace emu::hostexec::detail

// The call site is captured with GCC's __builtin_FILE/__builtin_LINE default
// arguments (the caller's location), for error messages.
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::SyncWarp, mask, 0, file, line);
}

#define EMU_HOSTEXEC_SHUFFLES(T)                                                                             \
  inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,                              \
                       const char* file = __builtin_FILE(), int line = __builtin_LINE()) {                   \
    return emu::hostexec::detail::shuffle(emu::hostexec::detail::WarpOp::ShflIdx, mask, var, srcLane, width, \
                                          file, line);                                                       \
  }                                                                                                          \
  inline T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,                    \
                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {                \
    return emu::hostexec::detail::shuffle(emu::hostexec::detail::WarpOp::ShflUp, mask, var,                  \
                                          static_cast<int>(delta & 31u), width, file, line);                 \
  }                                                                                                          \
  inline T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,                  \
                            const char* file = __builtin_FILE(), int line = __builtin_LINE()) {              \
    return emu::hostexec::detail::shuffle(emu::hostexec::detail::WarpOp::ShflDown, mask, var,                \
                                          static_cast<int>(delta & 31u), width, file, line);                 \
  }                                                                                                          \
  inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,                         \
                           const char* file = __builtin_FILE(), int line = __builtin_LINE()) {               \
    return emu::hostexec::detail::shuffle(emu::hostexec::detail::WarpOp::ShflXor, mask, var, laneMask,       \
                                          width, file, line);                                                \
  }
EMU_HOSTEXEC_SHUFFLES(int)
EMU_HOSTEXEC_SHUFFLES(unsigned int)
EMU_HOSTEXEC_SHUFFLES(long)
EMU_HOSTEXEC_SHUFFLES(unsigned long)
EMU_HOSTEXEC_SHUFFLES(long long)
EMU_HOSTEXEC_SHUFFLES(unsigned long long)
EMU_HOSTEXEC_SHUFFLES(float)
EMU_HOSTEXEC_SHUFFLES(double)
#undef EMU_HOSTEXEC_SHUFFLES

inline unsigned int __ballot_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::Ballot, mask, predicate != 0, file, line);
}
inline int __any_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return static_cast<int>(
      emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::Any, mask, predicate != 0, file, line));
}
inline int __all_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return static_cast<int>(
      emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::All, mask, predicate != 0, file, line));
}

// sm_80 warp reductions (redux.sync): 32-bit, every named lane gets the result.
inline unsigned __reduce_add_sync(unsigned mask, unsigned value, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::ReduceAddU, mask, value, file, line);
}
inline int __reduce_add_sync(unsigned mask, int value, const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  return static_cast<int>(emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::ReduceAddU, mask,
                                                      static_cast<uint32_t>(value), file, line));
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned value, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::ReduceMinU, mask, value, file, line);
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned value, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::ReduceMaxU, mask, value, file, line);
}
inline int __reduce_min_sync(unsigned mask, int value, const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  return static_cast<int>(emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::ReduceMinI, mask,
                                                      static_cast<uint32_t>(value), file, line));
}
inline int __reduce_max_sync(unsigned mask, int value, const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  return static_cast<int>(emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::ReduceMaxI, mask,
                                                      static_cast<uint32_t>(value), file, line));
}
inline unsigned __reduce_and_sync(unsigned mask, unsigned value, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::ReduceAnd, mask, value, file, line);
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned value, const char* file = __builtin_FILE(),
                                 int line = __builtin_LINE()) {
  return emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::ReduceOr, mask, value, file, line);
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned value, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return emu::hostexec::detail::vote(emu::hostexec::detail::WarpOp::ReduceXor, mask, value, file, line);
}

// The lanes of the caller's warp that have not exited. On the GPU the result
// depends on which lanes happen to be converged; fibers are never converged,
// so the executor reports every live lane (docs/host_executor.md).
inline unsigned __activemask() {
  using namespace emu::hostexec::detail;
  ThreadCtx& t = running_thread();
  BlockRun& b = *current.block;
  WarpOf w = warp_of(b, t);
  unsigned m = 0;
  for (unsigned l = 0; l < w.size; ++l)
    if (b.thread(w.base + l).state != ThreadState::Exited) m |= 1u << l;
  return m;
}
