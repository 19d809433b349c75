// Built-in variables in a 3-D grid of 3-D blocks, and the execution orders of
// the host executor (docs/host_executor.md): forward, reverse and seeded
// random really change which thread and which block runs first.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <set>
#include <tuple>
#include <vector>

#include "backends/cuda/host/executor.h"

using emu::hostexec::launch;
using emu::hostexec::Order;
using emu::hostexec::Schedule;

namespace {

struct Coords {
  unsigned tx, ty, tz, bx, by, bz, bdx, bdy, bdz, gdx, gdy, gdz;
  int warp_size;
};

__global__ void record_coords(Coords* out, unsigned* count) {
  unsigned slot = atomicAdd(count, 1u);
  out[slot] = Coords{threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z, blockDim.x,
                     blockDim.y,  blockDim.z,  gridDim.x,   gridDim.y,  gridDim.z,  warpSize};
}

TEST_CASE("host executor: built-ins cover a 3-D grid of 3-D blocks exactly once", "[executor]") {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  const unsigned total = 3 * 2 * 2 * 4 * 3 * 2;
  std::vector<Coords> out(total);
  unsigned count = 0;
  launch("record_coords", record_coords, grid, block, 0, out.data(), &count);
  REQUIRE(count == total);
  std::set<std::tuple<unsigned, unsigned, unsigned, unsigned, unsigned, unsigned>> seen;
  for (const Coords& c : out) {
    REQUIRE(c.bdx == 4);
    REQUIRE(c.bdy == 3);
    REQUIRE(c.bdz == 2);
    REQUIRE(c.gdx == 3);
    REQUIRE(c.gdy == 2);
    REQUIRE(c.gdz == 2);
    REQUIRE(c.warp_size == 32);
    REQUIRE(c.tx < 4);
    REQUIRE(c.ty < 3);
    REQUIRE(c.tz < 2);
    REQUIRE(c.bx < 3);
    REQUIRE(c.by < 2);
    REQUIRE(c.bz < 2);
    seen.insert({c.tx, c.ty, c.tz, c.bx, c.by, c.bz});
  }
  REQUIRE(seen.size() == total);  // every combination, none twice
}

// Each thread takes the next ticket when it runs.
__global__ void take_ticket(unsigned* ticket_of, unsigned* next) {
  unsigned id = (blockIdx.x * blockDim.x) + threadIdx.x;
  ticket_of[id] = (*next)++;  // no atomic needed: fibers run one at a time
}

std::vector<unsigned> tickets(Schedule s, unsigned blocks, unsigned threads) {
  std::vector<unsigned> t(blocks * threads, ~0u);
  unsigned next = 0;
  launch(s, "take_ticket", take_ticket, dim3(blocks), dim3(threads), 0, t.data(), &next);
  return t;
}

TEST_CASE("host executor: the order changes which thread runs first", "[executor]") {
  const unsigned n = 64;
  std::vector<unsigned> forward = tickets({Order::Forward, 0}, 1, n);
  std::vector<unsigned> reverse = tickets({Order::Reverse, 0}, 1, n);
  std::vector<unsigned> random7 = tickets({Order::Random, 7}, 1, n);
  std::vector<unsigned> again7 = tickets({Order::Random, 7}, 1, n);
  std::vector<unsigned> random8 = tickets({Order::Random, 8}, 1, n);
  for (unsigned i = 0; i < n; ++i) {
    REQUIRE(forward[i] == i);
    REQUIRE(reverse[i] == n - 1 - i);
  }
  std::vector<unsigned> sorted = random7;
  std::sort(sorted.begin(), sorted.end());
  REQUIRE(sorted == forward);  // a permutation
  REQUIRE(random7 != forward);
  REQUIRE(random7 != reverse);
  REQUIRE(random7 == again7);  // the same seed, the same order
  REQUIRE(random7 != random8);
}

TEST_CASE("host executor: the order applies to the blocks of the grid", "[executor]") {
  const unsigned blocks = 16, threads = 4;
  auto first_ticket_of_block = [&](Schedule s) {
    std::vector<unsigned> t = tickets(s, blocks, threads);
    std::vector<unsigned> rank(blocks);
    for (unsigned b = 0; b < blocks; ++b) {
      unsigned lo = *std::min_element(t.begin() + b * threads, t.begin() + (b + 1) * threads);
      unsigned hi = *std::max_element(t.begin() + b * threads, t.begin() + (b + 1) * threads);
      REQUIRE(hi - lo == threads - 1);  // blocks run one after another
      rank[b] = lo / threads;
    }
    return rank;
  };
  std::vector<unsigned> f = first_ticket_of_block({Order::Forward, 0});
  std::vector<unsigned> r = first_ticket_of_block({Order::Reverse, 0});
  std::vector<unsigned> x = first_ticket_of_block({Order::Random, 3});
  for (unsigned b = 0; b < blocks; ++b) {
    REQUIRE(f[b] == b);
    REQUIRE(r[b] == blocks - 1 - b);
  }
  REQUIRE(x != f);
  REQUIRE(x != r);
}

// After a barrier the order applies again: under reverse, the highest thread
// resumes first.
__global__ void tickets_around_barrier(unsigned* before, unsigned* after, unsigned* next) {
  before[threadIdx.x] = (*next)++;
  __syncthreads();
  after[threadIdx.x] = (*next)++;
}

TEST_CASE("host executor: threads released by a barrier resume in the schedule's order", "[executor]") {
  for (Order o : {Order::Forward, Order::Reverse}) {
    std::vector<unsigned> before(40), after(40);
    unsigned next = 0;
    launch(Schedule{o, 0}, "tickets_around_barrier", tickets_around_barrier, dim3(1), dim3(40), 0,
           before.data(), after.data(), &next);
    for (unsigned i = 0; i < 40; ++i) {
      unsigned rank = o == Order::Forward ? i : 39 - i;
      REQUIRE(before[i] == rank);
      REQUIRE(after[i] == 40 + rank);
    }
  }
}

TEST_CASE("host executor: set_default_schedule overrides the environment", "[executor]") {
  emu::hostexec::set_default_schedule(Schedule{Order::Reverse, 0});
  std::vector<unsigned> t(8);
  unsigned next = 0;
  launch("take_ticket", take_ticket, dim3(1), dim3(8), 0, t.data(), &next);
  emu::hostexec::set_default_schedule(std::nullopt);
  for (unsigned i = 0; i < 8; ++i) REQUIRE(t[i] == 7 - i);
  REQUIRE(emu::hostexec::default_schedule().order == emu::hostexec::schedule_from_env().order);
}

}  // namespace
