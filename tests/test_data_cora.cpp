// Cora (LINQS content/cites), written here: features, adjacency, split masks.
#include <catch2/catch.hpp>
#include <set>

#include "data/cora.h"
#include "test_data_util.h"
#include "test_util.h"

using namespace emu;
using emu::test::TempDir;

namespace {

// 12 papers, 5 features, 3 classes (4 each); paper ids not in order.
const char* kLabels[3] = {"Theory", "Genetic_Algorithms", "Neural_Networks"};  // sorted: G, N, T

void write_toy(const std::string& dir, std::vector<std::vector<int>>& features,
               std::vector<std::string>& labels) {
  std::string content;
  for (int i = 0; i < 12; ++i) {
    std::vector<int> f(5);
    for (int k = 0; k < 5; ++k) f[k] = ((i * 3 + k * 5) % 7) < 3;
    if (i == 4) f = {0, 0, 0, 0, 0};  // an empty row
    features.push_back(f);
    labels.push_back(kLabels[i % 3]);
    content += std::to_string(1000 - 7 * i);
    for (int v : f) content += "\t" + std::to_string(v);
    content += "\t" + labels.back() + "\n";
  }
  emu::test::write_text(dir + "/cora.content", content);
  // cited<TAB>citing: 0-1 twice (once each way), 2-3, a self-citation 5-5, 11-0.
  auto id = [](int i) { return std::to_string(1000 - 7 * i); };
  std::string cites = id(0) + "\t" + id(1) + "\n" + id(1) + "\t" + id(0) + "\n" + id(2) + "\t" + id(3) +
                      "\n" + id(5) + "\t" + id(5) + "\n" + id(11) + "\t" + id(0) + "\n";
  emu::test::write_text(dir + "/cora.cites", cites);
}

}  // namespace

TEST_CASE("Cora: features, symmetric adjacency, labels", "[data][cora]") {
  TempDir dir;
  std::vector<std::vector<int>> features;
  std::vector<std::string> labels;
  write_toy(dir.path(), features, labels);
  data::CoraOptions o;
  o.root = dir.path();
  o.train_per_class = 2;
  o.val_size = 3;
  o.test_size = 3;
  for (bool normalize : {true, false}) {
    o.row_normalize = normalize;
    auto ds = data::load_cora(o);
    REQUIRE(ds->size() == 1);
    data::Batch b = ds->get({0}, 0, 0);
    const CsrMatrix& x = b.sparse_at("x");
    REQUIRE(x.rows == 12);
    REQUIRE(x.cols == 5);
    std::vector<float> xv = x.values.to_vector();
    for (int i = 0; i < 12; ++i) {
      int count = 0;
      for (int v : features[i]) count += v;
      std::vector<int32_t> want_cols;
      for (int k = 0; k < 5; ++k)
        if (features[i][k]) want_cols.push_back(k);
      REQUIRE(x.row_ptr[i + 1] - x.row_ptr[i] == count);
      for (int64_t p = x.row_ptr[i]; p < x.row_ptr[i + 1]; ++p) {
        CHECK(x.col_idx[p] == want_cols[p - x.row_ptr[i]]);
        CHECK(xv[p] == (normalize ? 1.0f / static_cast<float>(count) : 1.0f));
      }
    }
  }
  auto ds = data::load_cora(o);
  data::Batch b = ds->get({0}, 0, 0);
  const CsrMatrix& adj = b.sparse_at("adj");
  REQUIRE(adj.rows == 12);
  REQUIRE(adj.cols == 12);
  std::set<std::pair<int, int>> edges;
  for (int r = 0; r < 12; ++r)
    for (int64_t p = adj.row_ptr[r]; p < adj.row_ptr[r + 1]; ++p) {
      if (p > adj.row_ptr[r]) CHECK(adj.col_idx[p] > adj.col_idx[p - 1]);  // ascending
      edges.insert({r, adj.col_idx[p]});
    }
  CHECK(edges == std::set<std::pair<int, int>>{{0, 1}, {1, 0}, {2, 3}, {3, 2}, {0, 11}, {11, 0}});
  CHECK(adj.values.to_vector() == std::vector<float>(6, 1.0f));
  std::vector<float> y = emu::test::field(b, "y");
  for (int i = 0; i < 12; ++i) CHECK(y[i] == float(i % 3 == 0 ? 2 : i % 3 == 1 ? 0 : 1));
  CHECK(ds->meta() == std::map<std::string, int64_t>{{"nodes", 12},
                                                     {"features", 5},
                                                     {"classes", 3},
                                                     {"edges", 3},
                                                     {"train_nodes", 6},
                                                     {"val_nodes", 3},
                                                     {"test_nodes", 3}});
}

TEST_CASE("Cora split: per-class training nodes, disjoint masks, keyed by seed", "[data][cora]") {
  TempDir dir;
  std::vector<std::vector<int>> features;
  std::vector<std::string> labels;
  write_toy(dir.path(), features, labels);
  data::CoraOptions o;
  o.root = dir.path();
  o.train_per_class = 2;
  o.val_size = 3;
  o.test_size = 2;
  auto masks = [&](uint64_t seed, const std::string& split) {
    o.split_seed = seed;
    o.split = split;
    return data::load_cora(o)->get({0}, 99, 5);  // the loader's seed and epoch do not matter
  };
  data::Batch b = masks(1, "val");
  std::vector<float> tr = emu::test::field(b, "train_mask"), va = emu::test::field(b, "val_mask"),
                     te = emu::test::field(b, "test_mask");
  CHECK(emu::test::field(b, "mask") == va);
  CHECK(b.size == 3);
  int per_class[3] = {0, 0, 0}, n_tr = 0, n_va = 0, n_te = 0;
  std::vector<float> y = emu::test::field(b, "y");
  for (int i = 0; i < 12; ++i) {
    CHECK(tr[i] + va[i] + te[i] <= 1.0f);  // disjoint
    if (tr[i] == 1) ++per_class[int(y[i])], ++n_tr;
    n_va += va[i] == 1;
    n_te += te[i] == 1;
  }
  CHECK(per_class[0] == 2);
  CHECK(per_class[1] == 2);
  CHECK(per_class[2] == 2);
  CHECK(n_va == 3);
  CHECK(n_te == 2);
  // Same seed: same masks for every split's dataset; the split picks "mask".
  data::Batch again = masks(1, "test");
  CHECK(emu::test::field(again, "train_mask") == tr);
  CHECK(emu::test::field(again, "mask") == te);
  CHECK(again.size == 2);
  // Another seed moves some nodes.
  int moved = 0;
  for (uint64_t s = 2; s < 6; ++s) moved += emu::test::field(masks(s, "train"), "train_mask") != tr;
  CHECK(moved >= 3);
  // Too few nodes left.
  o.val_size = 5;
  o.test_size = 2;
  CHECK_THROWS_WITH(data::load_cora(o), Catch::Contains("fewer than val_size + test_size"));
}

TEST_CASE("Cora errors name the file, line and URL", "[data][cora]") {
  TempDir dir;
  data::CoraOptions o;
  o.root = dir.path();
  CHECK_THROWS_WITH(data::load_cora(o), Catch::Contains("cora.content") && Catch::Contains("not found") &&
                                            Catch::Contains("linqs-data.soe.ucsc.edu"));
  emu::test::write_text(dir / "cora.content", "1\t0\t1\tA\n2\t1\t0\n");
  CHECK_THROWS_WITH(data::load_cora(o), Catch::Contains("line 2: 1 features, earlier lines have 2"));
  emu::test::write_text(dir / "cora.content", "1\t0\t1\tA\n2\t1\t2\tB\n");
  CHECK_THROWS_WITH(data::load_cora(o), Catch::Contains("line 2: feature 1 is '2'"));
  emu::test::write_text(dir / "cora.content", "1\t0\t1\tA\n2\t1\t0\tB\n");
  emu::test::write_text(dir / "cora.cites", "1\t3\n");
  o.train_per_class = 1;
  o.val_size = o.test_size = 0;
  CHECK_THROWS_WITH(data::load_cora(o),
                    Catch::Contains("cora.cites") && Catch::Contains("line 1: paper id 3 is not in"));
}
