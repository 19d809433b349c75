// Cora as shipped (LINQS / pygcn) in $EMUTRAIN_DATA_ROOT/cora or ../shared/data/cora.
#include <catch2/catch.hpp>
#include <iostream>
#include <set>

#include "data/file_io.h"
#include "data/registry.h"
#include "test_data_util.h"

using namespace emu;

TEST_CASE("real Cora: 2708 nodes, 1433 features, 140/500/1000 split", "[data][real]") {
  std::string root = emu::test::real_data_root() + "/cora";
  if (!data::file_exists(root + "/cora.content")) {
    std::cout << "SKIP: Cora not found in " << root << "\n";
    return;
  }
  REQUIRE(data::read_lines(root + "/cora.cites", "", "").size() == 5429);
  YAML::Node cfg = YAML::Load("{type: cora, root: '" + root + "'}");
  auto ds = data::make_dataset(cfg, "train");
  auto m = ds->meta();
  CHECK(m["nodes"] == 2708);
  CHECK(m["features"] == 1433);
  CHECK(m["classes"] == 7);
  CHECK(m["train_nodes"] == 140);
  CHECK(m["val_nodes"] == 500);
  CHECK(m["test_nodes"] == 1000);
  // Kipf & Welling's preprocessed Cora has 5278 undirected edges (5429 lines
  // with both directions and duplicates merged).
  CHECK(m["edges"] == 5278);
  data::Batch b = ds->get({0}, 0, 0);
  CHECK(b.size == 140);
  const CsrMatrix& x = b.sparse_at("x");
  CHECK(x.rows == 2708);
  CHECK(x.cols == 1433);
  CHECK(x.nnz() == 49216);  // ones in cora.content
  // Row-normalised: each row sums to 1 within rounding.
  std::vector<float> v = x.values.to_vector();
  for (int64_t r = 0; r < x.rows; r += 101) {
    double sum = 0;
    for (int64_t p = x.row_ptr[r]; p < x.row_ptr[r + 1]; ++p) sum += v[p];
    CHECK(std::abs(sum - 1.0) < 1e-5);
  }
  const CsrMatrix& adj = b.sparse_at("adj");
  CHECK(adj.nnz() == 2 * 5278);
  std::vector<float> y = emu::test::field(b, "y");
  std::vector<float> tr = emu::test::field(b, "train_mask");
  int per_class[7] = {};
  for (int i = 0; i < 2708; ++i)
    if (tr[i] == 1) ++per_class[static_cast<int>(y[i])];
  for (int c = 0; c < 7; ++c) CHECK(per_class[c] == 20);
  std::cout << ds->describe() << "\n";
}
