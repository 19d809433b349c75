// The host executor runs real CUDA kernels on the CPU (docs/host_executor.md):
// tiled GEMM, warp-shuffle reduction, block scan, atomic histogram, shared
// memory, and a race (missing __syncthreads) that some order exposes. Each
// kernel's output is checked against a plain serial loop. The binary runs
// under every EMU_HOSTEXEC_ORDER (tests/host_executor.cmake); tests that need
// one order name it.
#include "backends/cuda/host/executor.h"
// The executor first, as in a kernel file: the headers below (standard,
// Catch2) must compile after the CUDA keywords became macros.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

using emu::hostexec::launch;
using emu::hostexec::Order;
using emu::hostexec::Schedule;

namespace {

const Schedule kForward{Order::Forward, 0};
const Schedule kReverse{Order::Reverse, 0};
const std::vector<Schedule> kAllOrders = {
    {Order::Forward, 0}, {Order::Reverse, 0}, {Order::Random, 1}, {Order::Random, 2}, {Order::Random, 99}};

// --- 1. tiled GEMM: C[M,N] = A[M,K] B[K,N], 16x16 shared tiles ---
constexpr int kTile = 16;

__global__ void gemm_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                           int m, int n, int k) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile + 1];
  int row = blockIdx.y * kTile + threadIdx.y;
  int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < k; t += kTile) {
    as[threadIdx.y][threadIdx.x] =
        (row < m && t + (int)threadIdx.x < k) ? a[row * k + t + threadIdx.x] : 0.0f;
    bs[threadIdx.y][threadIdx.x] =
        (col < n && t + (int)threadIdx.y < k) ? b[(t + threadIdx.y) * n + col] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < kTile; ++kk)
      acc = __fadd_rn(acc, __fmul_rn(as[threadIdx.y][kk], bs[kk][threadIdx.x]));
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

TEST_CASE("host executor: tiled GEMM equals the serial triple loop bit for bit", "[executor]") {
  const int m = 37, n = 29, k = 53;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(m * k), b(k * n), c(m * n, -1.0f), ref(m * n);
  for (float& x : a) x = dist(gen);
  for (float& x : b) x = dist(gen);
  // Same k order as the kernel: zero-padded tail terms add +0.0f, which keeps
  // every partial sum unchanged (and the sum cannot be -0 after a nonzero term).
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int kk = 0; kk < k; ++kk) acc = acc + a[i * k + kk] * b[kk * n + j];
      ref[i * n + j] = acc;
    }
  dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  dim3 block(kTile, kTile);
  launch("gemm_tiled", gemm_tiled, grid, block, 0, a.data(), b.data(), c.data(), m, n, k);
  for (int i = 0; i < m * n; ++i) REQUIRE(c[i] == ref[i]);
}

// --- 2. warp-shuffle reductions ---
__global__ void warp_sum_down(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) atomicAdd(out, v);
}

__global__ void warp_sum_xor(const long long* in, long long* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  long long v = in[i];
  for (int mask = 1; mask < 32; mask *= 2) v += __shfl_xor_sync(0xffffffffu, v, mask);
  out[i] = v;  // every lane holds the warp's total
}

TEST_CASE("host executor: warp shuffle reductions equal std::accumulate", "[executor]") {
  const int n = 1000;  // not a multiple of the block: the tail lanes add 0
  std::vector<int> in(n);
  std::iota(in.begin(), in.end(), -300);
  int out = 0;
  launch("warp_sum_down", warp_sum_down, dim3((n + 127) / 128), dim3(128), 0, in.data(), &out, n);
  REQUIRE(out == std::accumulate(in.begin(), in.end(), 0));

  std::vector<long long> big(128), sums(128);
  for (int i = 0; i < 128; ++i) big[i] = (1ll << 40) + 3 * i;
  launch("warp_sum_xor", warp_sum_xor, dim3(2), dim3(64), 0, big.data(), sums.data());
  for (int w = 0; w < 4; ++w) {
    long long expect = std::accumulate(big.begin() + 32 * w, big.begin() + 32 * (w + 1), 0ll);
    for (int l = 0; l < 32; ++l) REQUIRE(sums[32 * w + l] == expect);
  }
}

// Every lane records what each shuffle gave it.
__global__ void shuffle_edges(int* up, int* down, int* idx, int* xr, float* upf, int delta, int src,
                              int lmask, int width) {
  int lane = threadIdx.x;
  int v = 100 + lane;
  up[lane] = __shfl_up_sync(0xffffffffu, v, delta, width);
  down[lane] = __shfl_down_sync(0xffffffffu, v, delta, width);
  idx[lane] = __shfl_sync(0xffffffffu, v, src, width);
  xr[lane] = __shfl_xor_sync(0xffffffffu, v, lmask, width);
  upf[lane] = __shfl_up_sync(0xffffffffu, 0.5f + lane, delta, width);
}

TEST_CASE("host executor: shuffles with width < 32 and at the edge lanes", "[executor]") {
  struct Case {
    int delta, src, lmask, width;
  };
  for (Case cs : {Case{1, 3, 1, 32}, Case{3, 5, 4, 8}, Case{2, -1, 8, 8}, Case{0, 33, 16, 16},
                  Case{5, 7, 2, 4}, Case{1, 0, 1, 1}}) {
    std::vector<int> up(32), down(32), idx(32), xr(32);
    std::vector<float> upf(32);
    launch("shuffle_edges", shuffle_edges, dim3(1), dim3(32), 0, up.data(), down.data(), idx.data(),
           xr.data(), upf.data(), cs.delta, cs.src, cs.lmask, cs.width);
    int w = cs.width;
    for (int lane = 0; lane < 32; ++lane) {
      int seg = lane / w * w;  // first lane of this lane's segment
      // up: lanes within `delta` of their segment's start keep their value.
      int u = lane - seg >= cs.delta ? lane - cs.delta : lane;
      // down: lanes within `delta` of the segment's end keep theirs.
      int d = lane - seg + cs.delta < w ? lane + cs.delta : lane;
      // idx: srcLane modulo width, within the caller's segment (low 5 bits, as PTX).
      int s = seg + ((cs.src & 31) % w);
      // xor: a source in a later segment gives the caller its own value.
      int x = (lane ^ cs.lmask) < seg + w ? (lane ^ cs.lmask) : lane;
      INFO("width " << w << " lane " << lane);
      REQUIRE(up[lane] == 100 + u);
      REQUIRE(down[lane] == 100 + d);
      REQUIRE(idx[lane] == 100 + s);
      REQUIRE(xr[lane] == 100 + x);
      REQUIRE(upf[lane] == 0.5f + u);
    }
  }
}

// xor with a mask that reaches an earlier segment reads it (CUDA: only later
// segments are refused).
__global__ void shuffle_xor_earlier(int* out) {
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (int)threadIdx.x, 8, 8);
}

TEST_CASE("host executor: shfl_xor reads earlier segments but not later ones", "[executor]") {
  std::vector<int> out(32);
  launch("shuffle_xor_earlier", shuffle_xor_earlier, dim3(1), dim3(32), 0, out.data());
  // lane ^ 8 with width 8: lanes 8-15 read lanes 0-7 (earlier), lanes 0-7 would
  // read 8-15 (later): own value.
  for (int lane = 0; lane < 32; ++lane) {
    int x = lane ^ 8;
    REQUIRE(out[lane] == (x < lane / 8 * 8 + 8 ? x : lane));
  }
}

// --- 3. block-wide inclusive scan (Hillis-Steele, double buffered) ---
__global__ void block_scan(const int* in, int* out, int n) {
  __shared__ int buf[2][1024];
  int t = threadIdx.x;
  int base = blockIdx.x * blockDim.x;
  int cur = 0;
  buf[cur][t] = base + t < n ? in[base + t] : 0;
  __syncthreads();
  for (int offset = 1; offset < (int)blockDim.x; offset *= 2) {
    int v = buf[cur][t];
    if (t >= offset) v += buf[cur][t - offset];
    buf[1 - cur][t] = v;
    cur = 1 - cur;
    __syncthreads();
  }
  if (base + t < n) out[base + t] = buf[cur][t];
}

TEST_CASE("host executor: block scan equals std::partial_sum per block", "[executor]") {
  const int block = 256, n = 700;
  std::vector<int> in(n), out(n, 0), ref(n);
  std::mt19937 gen(3);
  for (int& x : in) x = static_cast<int>(gen() % 1000) - 500;
  for (int b0 = 0; b0 < n; b0 += block)
    std::partial_sum(in.begin() + b0, in.begin() + std::min(n, b0 + block), ref.begin() + b0);
  launch("block_scan", block_scan, dim3((n + block - 1) / block), dim3(block), 0, in.data(), out.data(), n);
  REQUIRE(out == ref);
}

// --- 4. atomics ---
__global__ void histogram(const unsigned* in, unsigned* bins, int n, unsigned nbins) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[in[i] % nbins], 1u);
}

TEST_CASE("host executor: atomic histogram equals a serial count", "[executor]") {
  const int n = 5000;
  const unsigned nbins = 37;
  std::vector<unsigned> in(n), bins(nbins, 0), ref(nbins, 0);
  std::mt19937 gen(11);
  for (unsigned& x : in) x = gen();
  for (unsigned x : in) ++ref[x % nbins];
  launch("histogram", histogram, dim3(7), dim3(96), 0, in.data(), bins.data(), n, nbins);
  REQUIRE(bins == ref);
}

struct AtomicOut {
  int imin, imax;
  unsigned umin, umax;
  long long llmin, llmax;
  unsigned long long ullmin, ullmax, ulladd;
  int cas_winners;
  unsigned long long cas64;
  int exch_sum;
  float fsum;
  double dsum;
  int isub;
  unsigned uinc;
};

__global__ void atomics_kernel(AtomicOut* o, int* owner, unsigned long long* cas_slot) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;  // 0..255
  int v = (t * 37) % 256 - 128;                   // a permutation of -128..127
  atomicMin(&o->imin, v);
  atomicMax(&o->imax, v);
  atomicMin(&o->umin, 1000u + (unsigned)(t * 37 % 256));
  atomicMax(&o->umax, 1000u + (unsigned)(t * 37 % 256));
  atomicMin(&o->llmin, (long long)v * (1ll << 40));
  atomicMax(&o->llmax, (long long)v * (1ll << 40));
  atomicMin(&o->ullmin, (1ull << 50) + (unsigned long long)(t * 37 % 256));
  atomicMax(&o->ullmax, (1ull << 50) + (unsigned long long)(t * 37 % 256));
  atomicAdd(&o->ulladd, 1ull << 33);
  // Exactly one thread claims the slot; the winner is whoever runs first.
  if (atomicCAS(owner, -1, t) == -1) atomicAdd(&o->cas_winners, 1);
  // 64-bit CAS loop: an increment that never loses an update.
  unsigned long long old = *cas_slot, assumed;
  do {
    assumed = old;
    old = atomicCAS(cas_slot, assumed, assumed + 3ull);
  } while (old != assumed);
  // atomicExch: every value written is returned exactly once (a chain).
  int prev = atomicExch(&o->exch_sum, t);
  atomicAdd(&o->isub, prev);  // sum of all returned values
  atomicAdd(&o->fsum, 0.25f);
  atomicAdd(&o->dsum, 0.125);
  atomicSub(&o->isub, 1);
  atomicInc(&o->uinc, 9u);  // wraps to 0 after 9
}

TEST_CASE("host executor: atomicCAS/Min/Max/Exch on 32- and 64-bit", "[executor]") {
  AtomicOut o{};
  o.imin = INT32_MAX;
  o.imax = INT32_MIN;
  o.umin = ~0u;
  o.umax = 0;
  o.llmin = INT64_MAX;
  o.llmax = INT64_MIN;
  o.ullmin = ~0ull;
  o.ullmax = 0;
  o.exch_sum = -1;
  int owner = -1;
  unsigned long long cas_slot = 5;
  launch("atomics_kernel", atomics_kernel, dim3(2), dim3(128), 0, &o, &owner, &cas_slot);
  REQUIRE(o.imin == -128);
  REQUIRE(o.imax == 127);
  REQUIRE(o.umin == 1000u);
  REQUIRE(o.umax == 1255u);
  REQUIRE(o.llmin == -128ll * (1ll << 40));
  REQUIRE(o.llmax == 127ll * (1ll << 40));
  REQUIRE(o.ullmin == (1ull << 50));
  REQUIRE(o.ullmax == (1ull << 50) + 255);
  REQUIRE(o.ulladd == 256ull << 33);
  REQUIRE(o.cas_winners == 1);
  REQUIRE(owner >= 0);
  REQUIRE(owner < 256);
  REQUIRE(cas_slot == 5 + 3ull * 256);
  // The returned values are -1 and every t but the last writer's: their sum
  // plus the final value is -1 + sum(0..255); then 256 subtractions of 1.
  REQUIRE(o.isub + o.exch_sum == -1 + 255 * 256 / 2 - 256);
  REQUIRE(o.fsum == 64.0f);
  REQUIRE(o.dsum == 32.0);
  REQUIRE(o.uinc == 256u % 10u);
}

// --- 5. a missing __syncthreads is a race that some order exposes ---
template <bool kBarrier>
__global__ void neighbour_read(int* out, int salt) {
  __shared__ int slot[64];
  int t = threadIdx.x;
  slot[t] = t * 1000 + salt;
  if (kBarrier) __syncthreads();
  out[t] = slot[(t + 1) % 64];
}

TEST_CASE("host executor: a missing __syncthreads gives a wrong result under some order", "[executor]") {
  int salt = 0;
  auto run = [&](bool barrier, const Schedule& s) {
    ++salt;  // a fresh salt per launch: stale shared values from earlier launches never look right
    std::vector<int> out(64, 0);
    if (barrier)
      launch(s, "neighbour_read<true>", neighbour_read<true>, dim3(1), dim3(64), 0, out.data(), salt);
    else
      launch(s, "neighbour_read<false>", neighbour_read<false>, dim3(1), dim3(64), 0, out.data(), salt);
    for (int t = 0; t < 64; ++t)
      if (out[t] != ((t + 1) % 64) * 1000 + salt) return false;
    return true;
  };
  int wrong = 0;
  for (const Schedule& s : kAllOrders) {
    REQUIRE(run(true, s));
    if (!run(false, s)) ++wrong;
  }
  REQUIRE(wrong > 0);
  REQUIRE_FALSE(run(false, kForward));  // thread t reads slot t+1 before thread t+1 wrote it
}

// --- 7. shared memory is shared by the block ---
__global__ void broadcast_shared(int* out, int value) {
  __shared__ int v;
  if (threadIdx.x == 0) v = value;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = v + (int)blockIdx.x;
}

TEST_CASE("host executor: __shared__ is one object per block", "[executor]") {
  for (const Schedule& s : kAllOrders) {
    std::vector<int> out(3 * 100, 0);
    launch(s, "broadcast_shared", broadcast_shared, dim3(3), dim3(100), 0, out.data(), 4242);
    for (int i = 0; i < 300; ++i) REQUIRE(out[i] == 4242 + i / 100);
  }
}

__global__ void dynamic_reverse(const float* in, float* out, int n) {
  EMU_DYNAMIC_SHARED(float, buf);
  int t = threadIdx.x;
  buf[t] = in[blockIdx.x * n + t];
  __syncthreads();
  out[blockIdx.x * n + t] = buf[n - 1 - t];
}

__global__ void dynamic_alignment(unsigned long long* addr) {
  EMU_DYNAMIC_SHARED(double, buf);
  if (threadIdx.x == 0) *addr = reinterpret_cast<unsigned long long>(buf);
}

TEST_CASE("host executor: dynamic shared memory via EMU_DYNAMIC_SHARED", "[executor]") {
  const int n = 200, blocks = 3;
  std::vector<float> in(n * blocks), out(n * blocks, 0.0f);
  for (int i = 0; i < n * blocks; ++i) in[i] = 0.5f * i;
  launch("dynamic_reverse", dynamic_reverse, dim3(blocks), dim3(n), n * sizeof(float), in.data(), out.data(),
         n);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < n; ++t) REQUIRE(out[b * n + t] == in[b * n + n - 1 - t]);
  unsigned long long addr = 1;
  launch("dynamic_alignment", dynamic_alignment, dim3(1), dim3(32), 1000, &addr);
  REQUIRE(addr != 0);
  REQUIRE(addr % 16 == 0);
}

// Warp votes and reductions, and a partial last warp with an exact mask.
__global__ void votes(unsigned* ballots, int* anys, int* alls, unsigned* sums, int n) {
  int t = threadIdx.x;
  unsigned warp_lanes = min(32, n - t / 32 * 32);
  unsigned mask = warp_lanes == 32 ? 0xffffffffu : (1u << warp_lanes) - 1u;
  ballots[t] = __ballot_sync(mask, t % 3 == 0);
  anys[t] = __any_sync(mask, t == 40);
  alls[t] = __all_sync(mask, t < 40);
  sums[t] = __reduce_add_sync(mask, (unsigned)t);
  __syncwarp(mask);
}

TEST_CASE("host executor: ballot, any, all and reduce over full and partial warps", "[executor]") {
  const int n = 45;  // warp 1 has 13 lanes
  std::vector<unsigned> ballots(n), sums(n);
  std::vector<int> anys(n), alls(n);
  launch("votes", votes, dim3(1), dim3(n), 0, ballots.data(), anys.data(), alls.data(), sums.data(), n);
  for (int t = 0; t < n; ++t) {
    int w = t / 32, lanes = w == 0 ? 32 : n - 32;
    unsigned ballot = 0, sum = 0;
    bool any = false, all = true;
    for (int l = 0; l < lanes; ++l) {
      int u = 32 * w + l;
      if (u % 3 == 0) ballot |= 1u << l;
      any = any || u == 40;
      all = all && u < 40;
      sum += u;
    }
    REQUIRE(ballots[t] == ballot);
    REQUIRE(anys[t] == (int)any);
    REQUIRE(alls[t] == (int)all);
    REQUIRE(sums[t] == sum);
  }
}

// __syncthreads_count/_and/_or reduce a predicate over the block.
__global__ void barrier_votes(int* counts, int* ands, int* ors, int threshold) {
  int t = threadIdx.x;
  counts[t] = __syncthreads_count(t % 3 == 0);
  ands[t] = __syncthreads_and(t < threshold);
  ors[t] = __syncthreads_or(t == threshold);
}

TEST_CASE("host executor: __syncthreads_count, _and and _or", "[executor]") {
  const int n = 100;
  std::vector<int> counts(n), ands(n), ors(n);
  for (int threshold : {50, 100}) {
    launch("barrier_votes", barrier_votes, dim3(1), dim3(n), 0, counts.data(), ands.data(), ors.data(),
           threshold);
    for (int t = 0; t < n; ++t) {
      REQUIRE(counts[t] == 34);  // 0, 3, ..., 99
      REQUIRE(ands[t] == (threshold >= n ? 1 : 0));
      REQUIRE(ors[t] == (threshold < n ? 1 : 0));
    }
  }
}

// Between two barriers no thread exits and every early exit has happened, so
// __activemask() is exactly the lanes that did not exit. (Without the second
// barrier a lane that finished the kernel before another lane's call would
// count as exited: fibers are never converged.)
__global__ void active_after_exits(unsigned* masks) {
  if (threadIdx.x % 5 == 0) return;
  __syncthreads();
  unsigned m = __activemask();
  __syncthreads();
  masks[threadIdx.x] = m;
}

TEST_CASE("host executor: __activemask reports the warp's live lanes", "[executor]") {
  const int n = 40;
  std::vector<unsigned> masks(n, 0);
  launch("active_after_exits", active_after_exits, dim3(1), dim3(n), 0, masks.data());
  for (int t = 0; t < n; ++t) {
    if (t % 5 == 0) continue;
    unsigned expect = 0;
    for (int u = t / 32 * 32; u < std::min(n, t / 32 * 32 + 32); ++u)
      if (u % 5 != 0) expect |= 1u << (u % 32);
    REQUIRE(masks[t] == expect);
  }
}

// A shuffle source outside the mask is undefined on the GPU; the executor
// gives the caller its own value (docs/host_executor.md).
__global__ void shuffle_half_warp(int* out) {
  int v = 10 * threadIdx.x;
  if (threadIdx.x < 16) v = __shfl_down_sync(0x0000ffffu, v, 8);
  out[threadIdx.x] = v;
}

TEST_CASE("host executor: a shuffle source outside the mask gives the caller's own value", "[executor]") {
  std::vector<int> out(32);
  launch("shuffle_half_warp", shuffle_half_warp, dim3(1), dim3(32), 0, out.data());
  for (int t = 0; t < 32; ++t) REQUIRE(out[t] == 10 * (t < 8 ? t + 8 : t));
}

}  // namespace
