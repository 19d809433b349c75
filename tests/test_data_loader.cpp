// DataLoader: keyed shuffling, batch composition independent of workers,
// resumption mid-epoch, error propagation; the Philox permutation.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

#include "data/draws.h"
#include "data/loader.h"

using namespace emu;

namespace {

// Example i is the value i; get() sleeps a little, longer for some examples,
// so that workers finish out of order.
class Counting : public data::Dataset {
 public:
  explicit Counting(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  data::Batch get(const std::vector<int64_t>& idx, uint64_t seed, int64_t epoch) const override {
    calls_++;
    std::this_thread::sleep_for(std::chrono::microseconds(idx.empty() || idx[0] % 3 ? 50 : 800));
    std::vector<float> v;
    for (int64_t i : idx) {
      if (i == fail_at_) throw std::runtime_error("broken example " + std::to_string(i));
      v.push_back(static_cast<float>(i));
    }
    data::Batch b;
    b.tensors["x"] = Tensor::from_vector({static_cast<int64_t>(v.size())}, v);
    b.tensors["key"] = Tensor::from_vector({2}, {static_cast<float>(seed), static_cast<float>(epoch)});
    b.size = static_cast<int64_t>(v.size());
    return b;
  }
  std::map<std::string, int64_t> meta() const override { return {}; }
  std::string describe() const override { return "counting"; }
  mutable std::atomic<int> calls_{0};

 private:
  int64_t n_, fail_at_;
};

std::vector<std::vector<float>> epoch_batches(data::DataLoader& loader, int64_t epoch, int64_t first = 0) {
  loader.start_epoch(epoch, first);
  std::vector<std::vector<float>> out;
  data::Batch b;
  while (loader.next(b)) out.push_back(b.at("x").to_vector());
  return out;
}

}  // namespace

TEST_CASE("philox_permutation is a keyed permutation", "[data][loader]") {
  for (int64_t n : {0, 1, 2, 17, 1000}) {
    std::vector<int64_t> p = data::philox_permutation(n, 5, 9);
    std::vector<int64_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) REQUIRE(sorted[i] == i);
    CHECK(p == data::philox_permutation(n, 5, 9));
  }
  std::vector<int64_t> a = data::philox_permutation(1000, 5, 9);
  CHECK(a != data::philox_permutation(1000, 6, 9));
  CHECK(a != data::philox_permutation(1000, 5, 10));
  // Position of example i: rank of its key, so computable element by element.
  uint64_t k3 = (uint64_t(philox_draw(5, 9, 6)) << 32) | philox_draw(5, 9, 7);
  int64_t rank = 0;
  for (int64_t i = 0; i < 1000; ++i)
    rank += ((uint64_t(philox_draw(5, 9, 2 * i)) << 32) | philox_draw(5, 9, 2 * i + 1)) < k3;
  CHECK(a[rank] == 3);
  // Not the identity or a rotation: about half the elements move by more than 100.
  int far = 0;
  for (int64_t i = 0; i < 1000; ++i) far += std::llabs(a[i] - i) > 100;
  CHECK(far > 600);
}

TEST_CASE("loader: batches of (seed, epoch) whatever the workers", "[data][loader]") {
  Counting ds(23);
  data::DataLoader w0(ds, 5, true, false, 42, 0);
  CHECK(w0.batches_per_epoch() == 5);
  auto e0 = epoch_batches(w0, 0);
  REQUIRE(e0.size() == 5);
  CHECK(e0.back().size() == 3);  // the short last batch
  // The epoch covers every example once, in the documented order.
  std::vector<int64_t> order =
      data::philox_permutation(23, 42, data::data_stream(data::DataDraw::Shuffle, 0));
  std::vector<float> flat;
  for (const auto& b : e0) flat.insert(flat.end(), b.begin(), b.end());
  std::vector<float> want(order.begin(), order.end());
  CHECK(flat == want);

  for (int workers : {1, 2, 4, 7}) {
    data::DataLoader w(ds, 5, true, false, 42, workers);
    CHECK(epoch_batches(w, 0) == e0);
    CHECK(epoch_batches(w, 3) == epoch_batches(w0, 3));
  }
  CHECK(epoch_batches(w0, 1) != e0);  // a new order each epoch

  // The seed and epoch reach the dataset (the augmentation key).
  w0.start_epoch(7);
  data::Batch b;
  REQUIRE(w0.next(b));
  CHECK(b.at("key").to_vector() == std::vector<float>{42, 7});

  // No shuffle, drop_last.
  data::DataLoader plain(ds, 5, false, true, 42, 3);
  CHECK(plain.batches_per_epoch() == 4);
  auto p = epoch_batches(plain, 0);
  REQUIRE(p.size() == 4);
  CHECK(p[1] == std::vector<float>{5, 6, 7, 8, 9});
}

TEST_CASE("loader: resuming at first_batch continues the same epoch", "[data][loader]") {
  Counting ds(40);
  data::DataLoader full(ds, 6, true, false, 9, 2);
  auto all = epoch_batches(full, 4);
  for (int workers : {0, 3}) {
    data::DataLoader resumed(ds, 6, true, false, 9, workers);
    auto tail = epoch_batches(resumed, 4, 4);
    CHECK(tail == std::vector<std::vector<float>>(all.begin() + 4, all.end()));
    CHECK(epoch_batches(resumed, 4, resumed.batches_per_epoch()).empty());
  }
  CHECK_THROWS_AS(full.start_epoch(0, 8), std::out_of_range);
  // Abandoning an epoch half way and starting another is fine.
  full.start_epoch(0);
  data::Batch b;
  full.next(b);
  CHECK(epoch_batches(full, 4) == all);
}

TEST_CASE("loader: a failing batch rethrows in order; bad arguments", "[data][loader]") {
  Counting ds(20, 13);
  for (int workers : {0, 3}) {
    data::DataLoader loader(ds, 4, false, false, 1, workers);
    loader.start_epoch(0);
    data::Batch b;
    for (int i = 0; i < 3; ++i) REQUIRE(loader.next(b));  // examples 0..11
    CHECK_THROWS_WITH(loader.next(b), Catch::Contains("broken example 13"));
    CHECK(loader.next(b));  // batch 4 (16..19) still comes
    CHECK(b.at("x").to_vector() == std::vector<float>{16, 17, 18, 19});
    CHECK_FALSE(loader.next(b));
  }
  data::DataLoader idle(ds, 4, false, false, 1, 2);
  data::Batch b;
  CHECK_THROWS_WITH(idle.next(b), Catch::Contains("start_epoch"));
  CHECK_THROWS_AS(data::DataLoader(ds, 0, false, false, 1, 0), std::invalid_argument);
  CHECK_THROWS_AS(data::DataLoader(ds, 4, false, false, 1, -1), std::invalid_argument);
}

TEST_CASE("loader: workers prepare batches ahead of the consumer", "[data][loader]") {
  Counting ds(64);
  data::DataLoader loader(ds, 4, false, false, 1, 2);
  auto wait_for = [&](int calls) {
    for (int i = 0; i < 5000 && ds.calls_.load() < calls; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // time to overshoot, if it would
    return ds.calls_.load();
  };
  loader.start_epoch(0);
  // Loading starts before the first next(), bounded at 2 * workers batches.
  CHECK(wait_for(4) == 4);
  data::Batch b;
  REQUIRE(loader.next(b));
  CHECK(wait_for(5) == 5);
}
