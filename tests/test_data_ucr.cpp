// UCR 2018 .tsv series (FordA layout), written here.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "data/ucr.h"
#include "test_data_util.h"
#include "test_util.h"

using namespace emu;
using emu::test::TempDir;

TEST_CASE("UCR: labels to sorted class indices, values to (N, T, 1)", "[data][ucr]") {
  TempDir dir;
  // Labels 1 and -1 (FordA's): class 0 is -1, class 1 is 1.
  const char* train_rows[] = {"1\t0.5\t-1.25\t3e-2\t7", "-1\t-0.1\t0.2\t0.30000001\t1e10",
                              "1\t1.17549435e-38\t-0\t2.5\t-3.75"};
  std::string text;
  for (const char* r : train_rows) text += std::string(r) + "\n";
  emu::test::write_text(dir / "FordA/FordA_TRAIN.tsv", text);
  emu::test::write_text(dir / "FordA/FordA_TEST.tsv", "-1\t1\t2\t3\t4\r\n1\t5\t6\t7\t8\r\n");
  data::UcrOptions o;
  o.root = dir.path();  // the parent of FordA/ is accepted
  auto ds = data::load_ucr(o, true);
  REQUIRE(ds->size() == 3);
  CHECK(ds->class_labels() == std::vector<std::string>{"-1", "1"});
  CHECK(ds->meta() == std::map<std::string, int64_t>{{"classes", 2}, {"length", 4}, {"channels", 1}});
  data::Batch b = ds->get({2, 1, 0}, 0, 0);
  CHECK(b.at("x").shape() == Shape{3, 4, 1});
  CHECK(emu::test::field(b, "y") == std::vector<float>{1, 0, 1});
  std::vector<float> want;
  for (int r : {2, 1, 0}) {
    std::string row = train_rows[r];
    size_t pos = row.find('\t') + 1;
    for (int k = 0; k < 4; ++k) {
      size_t end = row.find('\t', pos);
      want.push_back(std::strtof(row.substr(pos, end - pos).c_str(), nullptr));
      pos = end + 1;
    }
  }
  CHECK(emu::test::mismatch(emu::test::field(b, "x"), want) == "");
  CHECK(emu::test::bits(emu::test::field(b, "x")[1]) == 0x80000000u);  // -0 kept

  auto ts = data::load_ucr(o, false);
  REQUIRE(ts->size() == 2);
  data::Batch tb = ts->get({0, 1}, 0, 0);
  CHECK(emu::test::field(tb, "x") == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(emu::test::field(tb, "y") == std::vector<float>{0, 1});
}

TEST_CASE("UCR errors name the file and line", "[data][ucr]") {
  TempDir dir;
  data::UcrOptions o;
  o.root = dir.path();
  o.name = "Toy";
  CHECK_THROWS_WITH(data::load_ucr(o, true), Catch::Contains("Toy_TRAIN.tsv") &&
                                                 Catch::Contains("not found") &&
                                                 Catch::Contains("time_series_data_2018"));
  emu::test::write_text(dir / "Toy_TRAIN.tsv", "1\t2\t3\n2\t4\n");
  CHECK_THROWS_WITH(data::load_ucr(o, true), Catch::Contains("line 2: 1 values, earlier lines have 2"));
  emu::test::write_text(dir / "Toy_TRAIN.tsv", "1\t2\t3\n2\t4\tx\n");
  CHECK_THROWS_WITH(data::load_ucr(o, true), Catch::Contains("line 2: value 2 'x' is not a number"));
  emu::test::write_text(dir / "Toy_TRAIN.tsv", "1,2,3\n");
  CHECK_THROWS_WITH(data::load_ucr(o, true), Catch::Contains("line 1: no tab"));
  emu::test::write_text(dir / "Toy_TRAIN.tsv", "1\t2\t3\n2\t4\t5\n");
  emu::test::write_text(dir / "Toy_TEST.tsv", "3\t2\t3\n");
  CHECK_THROWS_WITH(data::load_ucr(o, false),
                    Catch::Contains("Toy_TEST.tsv") && Catch::Contains("label '3'"));
}
