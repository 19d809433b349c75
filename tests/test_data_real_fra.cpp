// fra.txt as distributed (manythings.org) in $EMUTRAIN_DATA_ROOT/fra-eng or ../shared/data/fra-eng.
#include <catch2/catch.hpp>
#include <iostream>

#include "data/file_io.h"
#include "data/registry.h"
#include "test_data_util.h"

using namespace emu;

TEST_CASE("real fra-eng: 167130 pairs, filtered subset and vocabularies", "[data][real]") {
  std::string root = emu::test::real_data_root() + "/fra-eng";
  if (!data::file_exists(root + "/fra.txt")) {
    std::cout << "SKIP: fra-eng not found in " << root << "\n";
    return;
  }
  std::string base = "{type: fra_eng, root: '" + root + "', test_fraction: 0.1, ";
  auto whole = data::make_dataset(YAML::Load(base + "}"), "train");
  auto whole_test = data::make_dataset(YAML::Load(base + "}"), "test");
  CHECK(whole->size() + whole_test->size() == 167130);
  CHECK(whole_test->size() == 16713);

  std::string small = base + "max_tokens: 10, max_pairs: 20000, val_fraction: 0.05}";
  auto train = data::make_dataset(YAML::Load(small), "train");
  auto val = data::make_dataset(YAML::Load(small), "val");
  auto test = data::make_dataset(YAML::Load(small), "test");
  CHECK(train->size() + val->size() + test->size() == 20000);
  CHECK(test->size() == 2000);
  CHECK(val->size() == 1000);
  auto m = train->meta();
  CHECK(m["max_src_len"] <= 11);
  CHECK(m["max_tgt_len"] <= 11);
  CHECK(m["src_vocab"] > 1000);
  CHECK(train->vocab("src")[4] == ".");  // the most frequent English token
  data::Batch b = train->get({0, 1, 2}, 0, 0);
  CHECK(b.at("src").dim(0) == 3);
  std::cout << train->describe() << "\n" << test->describe() << "\n";
}
