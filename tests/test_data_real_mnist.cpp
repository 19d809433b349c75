// MNIST t10k as distributed in $EMUTRAIN_DATA_ROOT/mnist or ../shared/data/mnist.
#include <catch2/catch.hpp>
#include <iostream>

#include "data/file_io.h"
#include "data/registry.h"
#include "test_data_util.h"

using namespace emu;

TEST_CASE("real MNIST t10k: 10000 images 28x28, first 8000 / last 2000", "[data][real]") {
  std::string root = emu::test::real_data_root() + "/mnist";
  if (!data::file_exists(root + "/t10k-images-idx3-ubyte.gz")) {
    std::cout << "SKIP: MNIST not found in " << root << "\n";
    return;
  }
  std::string base = "{type: mnist, root: '" + root + "', ";
  auto all = data::make_dataset(YAML::Load(base + "}"), "test");
  REQUIRE(all->size() == 10000);
  CHECK(all->meta() ==
        std::map<std::string, int64_t>{{"classes", 10}, {"channels", 1}, {"height", 28}, {"width", 28}});
  std::string split = base + "train_source: t10k, train_range: [0, 8000], test_range: [8000, 10000]}";
  auto train = data::make_dataset(YAML::Load(split), "train");
  auto test = data::make_dataset(YAML::Load(split), "test");
  CHECK(train->size() == 8000);
  CHECK(test->size() == 2000);
  // Example 0 of the test range is file example 8000.
  CHECK(emu::test::field(test->get({0}, 0, 0), "x") == emu::test::field(all->get({8000}, 0, 0), "x"));
  // Labels: all ten digits, roughly 1000 each; pixels normalised with 0.1307/0.3081.
  std::vector<int64_t> idx(10000);
  for (int i = 0; i < 10000; ++i) idx[i] = i;
  data::Batch b = all->get(idx, 0, 0);
  int counts[10] = {};
  for (float y : emu::test::field(b, "y")) ++counts[static_cast<int>(y)];
  for (int c = 0; c < 10; ++c) {
    CHECK(counts[c] > 850);
    CHECK(counts[c] < 1200);
  }
  CHECK(counts[0] == 980);  // the t10k digit counts: 980 zeros, 1135 ones
  CHECK(counts[1] == 1135);
  std::vector<float> x = emu::test::field(b, "x");
  double mean = 0;
  for (float v : x) mean += v;
  mean /= static_cast<double>(x.size());
  CHECK(std::abs(mean) < 0.05);  // t10k's mean is close to the training mean
  std::cout << all->describe() << "\n" << train->describe() << "\n" << test->describe() << "\n";
}
