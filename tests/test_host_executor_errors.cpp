// The host executor refuses what the GPU refuses or leaves undefined
// (docs/host_executor.md): bad launch configurations, divergent barriers,
// deadlocks, collectives naming exited lanes; and a kernel's own exception
// leaves launch() with the executor ready for the next launch.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/host/executor.h"
#include "backends/cuda/launch.h"

using Catch::Matchers::Contains;
using emu::hostexec::launch;
using emu::hostexec::LaunchError;
using emu::hostexec::Order;
using emu::hostexec::Schedule;

namespace {

__global__ void noop(int* out) {
  if (out) out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

__global__ void touch_dynamic(int* out, int words) {
  EMU_DYNAMIC_SHARED(int, buf);
  buf[words - 1 - threadIdx.x] = (int)threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = buf[words - 1 - threadIdx.x];
}

// Returns the LaunchError message of f(), or "" when it threw nothing.
template <class F>
std::string launch_error(F f) {
  try {
    f();
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("host executor: launch limits", "[executor]") {
  int* none = nullptr;
  CHECK_THAT(launch_error([&] { launch("noop", noop, dim3(1), dim3(1025), 0, none); }),
             Contains("kernel noop") && Contains("block (1025,1,1)"));
  CHECK_THAT(launch_error([&] { launch("noop", noop, dim3(1), dim3(32, 32, 2), 0, none); }),
             Contains("2048 threads"));
  CHECK_THAT(launch_error([&] { launch("noop", noop, dim3(1), dim3(1, 1, 65), 0, none); }),
             Contains("(1,1,65)"));
  CHECK_THAT(launch_error([&] { launch("noop", noop, dim3(1), dim3(0), 0, none); }),
             Contains("zero dimension"));
  CHECK_THAT(launch_error([&] { launch("noop", noop, dim3(0), dim3(32), 0, none); }),
             Contains("kernel noop") && Contains("empty grid (0,1,1)"));
  CHECK_THAT(launch_error([&] { launch("noop", noop, dim3(1, 1, 0), dim3(32), 0, none); }),
             Contains("empty grid (1,1,0)"));
  CHECK_THAT(launch_error([&] { launch("noop", noop, dim3(1, 65536), dim3(32), 0, none); }),
             Contains("grid (1,65536,1)"));
  CHECK_THAT(launch_error([&] { launch("noop", noop, dim3(2147483648u), dim3(32), 0, none); }),
             Contains("grid (2147483648,1,1)"));

  // Dynamic shared memory: 48 KiB without opt-in, up to 227 KiB with it.
  std::vector<int> out(32);
  launch("touch_dynamic", touch_dynamic, dim3(1), dim3(32), 48 * 1024, out.data(), 48 * 256);
  CHECK(out[5] == 5);
  CHECK_THAT(launch_error([&] {
               launch("touch_dynamic", touch_dynamic, dim3(1), dim3(32), 49 * 1024, out.data(), 49 * 256);
             }),
             Contains("kernel touch_dynamic") && Contains("50176 bytes") && Contains("49152"));
  CHECK_THROWS_AS(emu::hostexec::set_max_dynamic_shared(touch_dynamic, 232449), LaunchError);
  emu::hostexec::set_max_dynamic_shared(touch_dynamic, 100 * 1024);
  out.assign(32, 0);
  launch("touch_dynamic", touch_dynamic, dim3(1), dim3(32), 64 * 1024, out.data(), 64 * 256);
  for (int t = 0; t < 32; ++t) CHECK(out[t] == t);
  CHECK_THAT(launch_error([&] {
               launch("touch_dynamic", touch_dynamic, dim3(1), dim3(32), 101 * 1024, out.data(), 101 * 256);
             }),
             Contains("102400"));
  // The opt-in maximum itself is allowed.
  emu::hostexec::set_max_dynamic_shared(reinterpret_cast<const void*>(touch_dynamic), 232448);
  launch("touch_dynamic", touch_dynamic, dim3(1), dim3(32), 232448, out.data(), 232448 / 4);
  CHECK(out[31] == 31);
}

TEST_CASE("host executor: emu::gpu::launch refuses an empty grid and forwards otherwise", "[executor]") {
  std::vector<int> out(64, 0);
  try {
    emu::gpu::launch("noop", noop, dim3(0), dim3(64), 0, nullptr, out.data());
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Contains("kernel noop") && Contains("empty grid"));
  }
  emu::gpu::launch("noop", noop, dim3(2), dim3(32), 0, emu::gpu::Stream{}, out.data());
  for (int i = 0; i < 64; ++i) CHECK(out[i] == 1);
}

// --- 6. divergent barriers, deadlocks, collectives naming exited lanes ---
constexpr int kLineA = __LINE__ + 4;
constexpr int kLineB = __LINE__ + 6;
__global__ void divergent_barrier(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
    out[threadIdx.x] = 1;
  } else {
    __syncthreads();
    out[threadIdx.x] = 2;
  }
}

TEST_CASE("host executor: a divergent __syncthreads names the kernel and both call sites", "[executor]") {
  std::vector<int> out(32);
  std::string msg =
      launch_error([&] { launch("divergent_barrier", divergent_barrier, dim3(2), dim3(32), 0, out.data()); });
  INFO(msg);
  CHECK_THAT(msg, Contains("divergent __syncthreads in kernel divergent_barrier, block"));
  CHECK_THAT(msg, Contains("threads 0-15 at ") && Contains(":" + std::to_string(kLineA)));
  CHECK_THAT(msg, Contains("threads 16-31 at ") && Contains(":" + std::to_string(kLineB)));
  CHECK_THAT(msg, Contains("test_host_executor_errors.cpp"));
}

// Threads that exit do not hold the barrier (sm_70+): the others pass it.
__global__ void barrier_after_exit(int* out) {
  __shared__ int slot[20];
  if (threadIdx.x >= 20) return;
  slot[threadIdx.x] = (int)threadIdx.x + out[0];
  __syncthreads();
  out[threadIdx.x + 1] = slot[(threadIdx.x + 1) % 20];
}

TEST_CASE("host executor: __syncthreads counts only live threads", "[executor]") {
  for (int salt : {1000, 2000}) {  // a new salt per launch: stale shared values cannot pass
    std::vector<int> out(65, -1);
    out[0] = salt;
    launch("barrier_after_exit", barrier_after_exit, dim3(1), dim3(64), 0, out.data());
    // Reads after the barrier see the writes before it, whatever the order.
    for (int t = 0; t < 20; ++t) CHECK(out[t + 1] == (t + 1) % 20 + salt);
    for (int t = 21; t < 65; ++t) CHECK(out[t] == -1);
  }
}

// Lanes 0-15 wait in a shuffle that names lanes 16-31, which wait at the barrier.
__global__ void shuffle_vs_barrier(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x < 16)
    v = __shfl_sync(0xffffffffu, v, 0);
  else
    __syncthreads();
  out[threadIdx.x] = v;
}

TEST_CASE("host executor: a deadlock names the kernel, block and where threads wait", "[executor]") {
  std::vector<int> out(32);
  std::string msg = launch_error(
      [&] { launch("shuffle_vs_barrier", shuffle_vs_barrier, dim3(1, 2), dim3(32), 0, out.data()); });
  INFO(msg);
  CHECK_THAT(msg, Contains("deadlock in kernel shuffle_vs_barrier, block (0,"));
  CHECK_THAT(msg, Contains("threads 0-15 wait in __shfl_sync with mask 0xffffffff"));
  CHECK_THAT(msg, Contains("threads 16-31 wait in __syncthreads at"));
}

__global__ void shuffle_with_exited_lane(int* out) {
  if (threadIdx.x == 7) return;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, (int)threadIdx.x, 1);
}

TEST_CASE("host executor: a shuffle whose mask names an exited lane raises", "[executor]") {
  std::vector<int> out(32);
  // Depending on the order, lane 7 exits before or after the others arrive:
  // either way the launch fails naming the lane.
  for (Schedule s : {Schedule{Order::Forward, 0}, Schedule{Order::Reverse, 0}, Schedule{Order::Random, 5}}) {
    std::string msg = launch_error([&] {
      launch(s, "shuffle_with_exited_lane", shuffle_with_exited_lane, dim3(1), dim3(32), 0, out.data());
    });
    INFO(msg);
    CHECK_THAT(msg, Contains("kernel shuffle_with_exited_lane") && Contains("lane 7") && Contains("exited"));
    CHECK_THAT(msg, Contains("__shfl_down_sync"));
  }
}

__global__ void mask_beyond_warp(int* out) {
  out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);  // only 20 lanes exist
}

__global__ void mask_without_caller(int* out) {
  out[threadIdx.x] = __ballot_sync(1u << ((threadIdx.x + 1) % 32), 1);
}

__global__ void mixed_collectives(int* out) {
  if (threadIdx.x % 2)
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
  else
    out[threadIdx.x] = __ballot_sync(0xffffffffu, 1);
}

__global__ void bad_width(int* out) { out[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0, 12); }

TEST_CASE("host executor: misused collectives raise naming warp, lane and call site", "[executor]") {
  std::vector<int> out(32);
  std::string beyond =
      launch_error([&] { launch("mask_beyond_warp", mask_beyond_warp, dim3(1), dim3(20), 0, out.data()); });
  CHECK_THAT(beyond, Contains("kernel mask_beyond_warp") && Contains("warp 0, lane") &&
                         Contains("beyond the warp's 20 lanes") &&
                         Contains("test_host_executor_errors.cpp:"));
  CHECK_THAT(launch_error([&] {
               launch("mask_without_caller", mask_without_caller, dim3(1), dim3(32), 0, out.data());
             }),
             Contains("does not include the calling lane"));
  CHECK_THAT(
      launch_error([&] { launch("mixed_collectives", mixed_collectives, dim3(1), dim3(32), 0, out.data()); }),
      Contains("different collectives") && Contains("__shfl_xor_sync") && Contains("__ballot_sync"));
  CHECK_THAT(launch_error([&] { launch("bad_width", bad_width, dim3(1), dim3(32), 0, out.data()); }),
             Contains("width 12"));
}

// --- kernel exceptions: propagate unchanged, the executor cleans up ---
struct DeviceCheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Counted {
  static int alive;
  Counted() { ++alive; }
  ~Counted() { --alive; }
};
int Counted::alive = 0;

__global__ void throws_midway(int* out, int thrower) {
  Counted c;  // destroyed on every thread, also those abandoned at the barrier
  out[threadIdx.x] = 1;
  __syncthreads();
  if ((int)threadIdx.x == thrower)
    throw DeviceCheckFailed("device check failed in thread " + std::to_string(thrower));
  __syncthreads();
  out[threadIdx.x] = 2;
}

TEST_CASE("host executor: a kernel's exception leaves launch() and the next launch works", "[executor]") {
  std::vector<int> out(256, 0);
  for (int round = 0; round < 3; ++round) {
    try {
      launch("throws_midway", throws_midway, dim3(4), dim3(256), 0, out.data(), 77);
      FAIL("no exception");
    } catch (const DeviceCheckFailed& e) {
      CHECK(std::string(e.what()) == "device check failed in thread 77");
    }
    CHECK(Counted::alive == 0);
  }
  launch("throws_midway", throws_midway, dim3(2), dim3(256), 0, out.data(), -1);
  for (int i = 0; i < 256; ++i) CHECK(out[i] == 2);
  CHECK(Counted::alive == 0);
}

__global__ void traps(int* out) {
  if (threadIdx.x == 3 && blockIdx.x == 1) __trap();
  out[threadIdx.x] = 1;
}

TEST_CASE("host executor: __trap ends the launch naming the thread", "[executor]") {
  std::vector<int> out(8);
  CHECK_THAT(launch_error([&] { launch("traps", traps, dim3(2), dim3(8), 0, out.data()); }),
             Contains("__trap() in kernel traps, block (1,0,0), thread (3,0,0)"));
}

TEST_CASE("host executor: EMU_HOSTEXEC_ORDER parsing", "[executor]") {
  const char* saved = std::getenv("EMU_HOSTEXEC_ORDER");
  std::string keep = saved ? saved : "";
  auto parse = [](const char* v) {
    setenv("EMU_HOSTEXEC_ORDER", v, 1);
    return emu::hostexec::schedule_from_env();
  };
  CHECK(parse("forward").order == Order::Forward);
  CHECK(parse("").order == Order::Forward);
  CHECK(parse("reverse").order == Order::Reverse);
  CHECK(parse("random").order == Order::Random);
  CHECK(parse("random").seed == 0);
  CHECK(parse("random:18446744073709551615").seed == 18446744073709551615ull);
  CHECK(parse("random:42").seed == 42);
  for (const char* bad :
       {"Forward", "random:", "random:x", "random:-1", "random:18446744073709551616", "sideways"}) {
    try {
      parse(bad);
      FAIL("accepted " << bad);
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(e.what(), Contains("EMU_HOSTEXEC_ORDER") && Contains(std::string("'") + bad + "'"));
    }
  }
  // A bad value fails launches that use the environment, not those with an override.
  setenv("EMU_HOSTEXEC_ORDER", "sideways", 1);
  std::vector<int> out(32, 0);
  CHECK_THROWS_AS(launch("noop", noop, dim3(1), dim3(32), 0, out.data()), std::invalid_argument);
  emu::hostexec::set_default_schedule(Schedule{Order::Reverse, 0});
  launch("noop", noop, dim3(1), dim3(32), 0, out.data());
  CHECK(out[31] == 1);
  emu::hostexec::set_default_schedule(std::nullopt);
  if (saved)
    setenv("EMU_HOSTEXEC_ORDER", keep.c_str(), 1);
  else
    unsetenv("EMU_HOSTEXEC_ORDER");
}

}  // namespace
