// The definition of a data-parallel reduction (core/comm_reduce.h): run results
// added in rank order in acc_outer and rounded to out equal mac_reduce with
// chunk = the run length over all terms (an independent implementation,
// numerics/mac.h), bit for bit; the layers' split helpers.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "core/comm.h"
#include "core/comm_reduce.h"
#include "numerics/format_spec.h"
#include "test_util.h"

using namespace emu;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST_CASE("combine_runs equals mac_reduce with chunk = run length", "[parallel]") {
  const int64_t ranks = 3, runs = 2, run = 5, K = ranks * runs * run, n = 4;
  for (const char* acc : {"fp32", "bf16", "e5m7"}) {
    MacPolicy p;
    p.mul_exact = false;
    p.mul = parse_format("bf16");
    p.acc = parse_format(acc);
    p.out = parse_format("e4m3");
    p.acc_outer = parse_format("fp16");
    std::vector<float> a(static_cast<size_t>(n * K)), b(static_cast<size_t>(K));
    uint32_t s = 7;
    auto next = [&] {
      return static_cast<float>(static_cast<int32_t>((s = s * 1664525u + 1013904223u) >> 8) % 2001 - 1000) /
             97.0f;
    };
    for (float& v : a) v = next();
    for (float& v : b) v = next();
    // Run results of rank r's run j: mac_reduce over its terms with out = acc (unrounded).
    MacPolicy q = p;
    q.out = p.acc;
    std::vector<double> gathered(static_cast<size_t>(ranks * runs * n));
    for (int64_t r = 0; r < ranks; ++r)
      for (int64_t j = 0; j < runs; ++j)
        for (int64_t o = 0; o < n; ++o) {
          const int64_t k0 = (r * runs + j) * run;
          gathered[static_cast<size_t>((r * runs + j) * n + o)] =
              mac_reduce(q, a.data() + o * K + k0, b.data() + k0, run, nullptr, [](uint64_t) { return 0u; });
        }
    std::vector<float> y = combine_runs(p, gathered, static_cast<int>(ranks), runs, n);
    MacPolicy c = p;
    c.chunk = static_cast<int>(run);
    int differs_from_plain = 0;
    for (int64_t o = 0; o < n; ++o) {
      const float want = static_cast<float>(
          mac_reduce(c, a.data() + o * K, b.data(), K, nullptr, [](uint64_t) { return 0u; }));
      const float plain = static_cast<float>(
          mac_reduce(p, a.data() + o * K, b.data(), K, nullptr, [](uint64_t) { return 0u; }));
      INFO("acc " << acc << " output " << o);
      CHECK(bits(y[static_cast<size_t>(o)]) == bits(want));
      differs_from_plain += bits(want) != bits(plain);
    }
    if (std::string(acc) == "bf16") CHECK(differs_from_plain > 0);  // the chunking is not vacuous
  }
}

TEST_CASE("reduce_over_rows: off, emulate and errors", "[parallel]") {
  MacPolicy p;
  Tensor out = Tensor::zeros({1});
  std::vector<std::pair<int64_t, int64_t>> calls;
  int chunk_seen = -1;
  auto fn = [&](const MacPolicy& q, int64_t k0, int64_t k1, Tensor&) {
    calls.push_back({k0, k1});
    chunk_seen = q.chunk;
  };
  reduce_over_rows(p, 12, out, "t", fn);
  CHECK(chunk_seen == 0);
  DataParallelConfig c;
  c.mode = DataParallelConfig::Mode::Emulate;
  c.ranks = 4;
  set_data_parallel(c);
  calls.clear();
  reduce_over_rows(p, 12, out, "t", fn);
  CHECK(chunk_seen == 0);  // each run alone, unchunked
  CHECK(calls == std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 6}, {6, 9}, {9, 12}});  // the shares
  p.chunk = 2;
  CHECK_THROWS_WITH(
      reduce_over_rows(p, 12, out, "fc1 grad-weight", fn),
      Catch::Contains(
          "fc1 grad-weight: the per-rank share of 3 rows is not a multiple of the policy's chunk 2"));
  p.chunk = 0;
  CHECK_THROWS_WITH(reduce_over_rows(p, 10, out, "fc1 grad-weight", fn),
                    Catch::Contains("10 rows do not split into 4 equal rank shares"));
  p.acc = parse_format("bf16:sr");
  CHECK_THROWS_WITH(reduce_over_rows(p, 12, out, "fc1 grad-weight", fn),
                    Catch::Contains("stochastic rounding"));
  // Gather on one local rank with full rows: the rank's share is all rows, runs of chunk 4.
  p = MacPolicy();
  p.chunk = 4;
  c.mode = DataParallelConfig::Mode::Gather;
  c.ranks = 1;
  c.full_rows = true;
  set_data_parallel(c);
  calls.clear();
  reduce_over_rows(p, 12, out, "t", fn);
  CHECK(calls == std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 8}, {8, 12}});
  set_data_parallel(DataParallelConfig{});
}

TEST_CASE("sample_term_range and rows_outside_zeroed", "[parallel]") {
  Tensor x = Tensor::from_vector({3, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  // terms k = n * 2 + s; [1, 4) covers sample 0's s = 1 and sample 1's s = 0, 1.
  Tensor part = sample_term_range(x, 1, 4);
  CHECK(part.to_vector() == std::vector<float>{0, 2, 0, 4, 5, 6, 7, 8});
  CHECK(rows_outside_zeroed(x, 1, 2).to_vector() == std::vector<float>{0, 0, 0, 0, 5, 6, 7, 8, 0, 0, 0, 0});
}

TEST_CASE("LocalCommunicator: one rank, agree", "[parallel]") {
  LocalCommunicator c;
  CHECK(c.allgather_doubles({1.5, -0.0}).size() == 2);
  CHECK_NOTHROW(c.agree("recipe", "a: 1\n"));
}
