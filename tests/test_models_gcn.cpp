// The `gcn` model (models/gcn.cpp, Kipf & Welling): built from a recipe-like
// section, a forward and backward pass over a whole graph reach every
// parameter; targets are -1 outside the split's mask; the sparse input dropout
// is deterministic per step, differs between steps and is off in evaluation;
// sparse and dense features give the same prediction; and the shipped
// gcn_cora recipe, on a synthetic graph written in the Cora LINQS format,
// trains through the loader and the trainer to the stated test accuracy.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <sstream>

#include "core/autograd.h"
#include "core/csr.h"
#include "data/registry.h"
#include "tests/test_data_util.h"
#include "tests/test_models_util.h"
#include "tests/test_util.h"
#include "train/recipe.h"
#include "train/trainer.h"

using namespace emu;

namespace {

// A 6-node graph (a ring plus one chord), 5 sparse features, 3 classes, a train mask of 3 nodes.
data::Batch tiny_graph() {
  std::vector<int64_t> r, c;
  auto edge = [&](int64_t a, int64_t b) {
    r.push_back(a), c.push_back(b);
    r.push_back(b), c.push_back(a);
  };
  for (int64_t i = 0; i < 6; ++i) edge(i, (i + 1) % 6);
  edge(0, 3);
  data::Batch b;
  b.sparse["adj"] = std::make_shared<const CsrMatrix>(csr_from_coo(6, 6, r, c));
  std::vector<int64_t> fr = {0, 0, 1, 2, 2, 3, 4, 5, 5}, fc = {0, 3, 1, 2, 4, 0, 3, 1, 4};
  std::vector<float> fv = {0.5f, 0.5f, 1.0f, 0.5f, 0.5f, 1.0f, 1.0f, 0.5f, 0.5f};
  b.sparse["x"] = std::make_shared<const CsrMatrix>(csr_from_coo(6, 5, fr, fc, fv));
  b.tensors["y"] = Tensor::from_vector({6}, {0, 1, 2, 0, 1, 2});
  b.tensors["mask"] = Tensor::from_vector({6}, {1, 1, 0, 0, 1, 0});
  b.size = 3;
  return b;
}

const models::DataMeta kMeta = {{"features", 5}, {"classes", 3}, {"nodes", 6}};

// A Cora-format graph of `per_class` x 7 nodes: each paper has 5 words, each from its class's
// 12-word topic with probability 1/4, else from any of the 140 words; with `citations`, each
// paper cites 2 papers of its class and one paper of any class (else only paper 0 cites paper 1).
void write_synthetic_cora(const std::string& root, int per_class, bool citations) {
  const char* names[] = {"Case_Based",
                         "Genetic_Algorithms",
                         "Neural_Networks",
                         "Probabilistic_Methods",
                         "Reinforcement_Learning",
                         "Rule_Learning",
                         "Theory"};
  const int classes = 7, words = 140, n = classes * per_class;
  test::ByteSource bytes(42);
  auto rnd = [&](int m) {
    return static_cast<int>(((static_cast<uint32_t>(bytes.next()) << 8) | bytes.next()) % m);
  };
  auto id = [](int node) { return std::to_string(1000 + node * 7); };
  std::string content, cites = citations ? "" : id(0) + "\t" + id(1) + "\n";
  for (int i = 0; i < n; ++i) {
    const int cls = i % classes;
    std::vector<int> row(words, 0);
    for (int k = 0; k < 5; ++k) row[rnd(4) == 0 ? cls * 12 + rnd(12) : rnd(words)] = 1;
    content += id(i);
    for (int v : row) content += v ? "\t1" : "\t0";
    content += std::string("\t") + names[cls] + "\n";
    const int same1 = cls + classes * rnd(per_class), same2 = cls + classes * rnd(per_class), any = rnd(n);
    if (citations)
      cites +=
          id(same1) + "\t" + id(i) + "\n" + id(same2) + "\t" + id(i) + "\n" + id(any) + "\t" + id(i) + "\n";
  }
  test::write_text(root + "/cora.content", content);
  test::write_text(root + "/cora.cites", cites);
}

}  // namespace

TEST_CASE("gcn: forward and backward reach every parameter; targets follow the mask", "[models][gcn]") {
  // No dropout: on 6 nodes a dropped ReLU unit could leave a weight without a gradient by chance.
  auto m = test::model_from_yaml("{type: gcn, hidden: 8, dropout: 0, input_dropout: 0}", kMeta);
  m->train();
  const data::Batch b = tiny_graph();
  models::Prediction p = m->predict(b, "train");
  REQUIRE(p.logits.shape() == Shape{6, 3});
  CHECK(p.targets.to_vector() == std::vector<float>{0, 1, -1, -1, 1, -1});
  Tensor loss = m->loss(p);
  REQUIRE(std::isfinite(loss.item()));
  loss.backward();
  test::GradReport r = test::grad_report(*m);
  INFO("missing: " << test::join(r.missing) << "; non-finite: " << test::join(r.nonfinite)
                   << "; zero: " << test::join(r.all_zero));
  CHECK(r.missing.empty());
  CHECK(r.nonfinite.empty());
  CHECK(r.all_zero.empty());
  // Without "mask" the split's own mask field is used.
  data::Batch named = tiny_graph();
  named.tensors.erase("mask");
  named.tensors["test_mask"] = Tensor::from_vector({6}, {0, 0, 1, 1, 0, 0});
  CHECK(m->predict(named, "test").targets.to_vector() == std::vector<float>{-1, -1, 2, 0, -1, -1});
}

TEST_CASE("gcn: input dropout is keyed by the step and off in evaluation", "[models][gcn]") {
  auto m = test::model_from_yaml("{type: gcn, hidden: 4, dropout: 0, input_dropout: 0.5}", kMeta);
  const data::Batch b = tiny_graph();
  NoGradGuard no_grad;
  m->train();
  m->context().step = 3;
  const std::vector<float> a = m->predict(b, "train").logits.to_vector();
  const std::vector<float> again = m->predict(b, "train").logits.to_vector();
  m->context().step = 4;
  const std::vector<float> other = m->predict(b, "train").logits.to_vector();
  m->eval();
  const std::vector<float> e1 = m->predict(b, "test").logits.to_vector();
  auto no_drop = test::model_from_yaml("{type: gcn, hidden: 4, dropout: 0, input_dropout: 0}", kMeta);
  no_drop->train();
  const std::vector<float> e2 = no_drop->predict(b, "train").logits.to_vector();
  CHECK(test::mismatch(a, again) == "");
  CHECK(test::mismatch(a, other) != "");
  CHECK(test::mismatch(e1, e2) == "");  // same seed, same weights: evaluation = no dropout
  CHECK(test::mismatch(a, e1) != "");
}

TEST_CASE("gcn: sparse and dense features give the same prediction", "[models][gcn]") {
  auto m = test::model_from_yaml("{type: gcn, hidden: 4}", kMeta);
  m->eval();
  NoGradGuard no_grad;
  const data::Batch sparse = tiny_graph();
  data::Batch dense = tiny_graph();
  dense.tensors["x"] = csr_to_dense(*dense.sparse.at("x"));
  dense.sparse.erase("x");
  const std::vector<float> a = m->predict(sparse, "test").logits.to_vector();
  const std::vector<float> b = m->predict(dense, "test").logits.to_vector();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).margin(1e-6));
}

TEST_CASE("gcn: the gcn_cora recipes train on a synthetic Cora-format graph", "[models][gcn][train]") {
  struct Case {
    const char* recipe;
    bool citations;
    int64_t epochs;
  };
  std::map<std::string, double> acc;
  for (const Case& c : {Case{"gcn_cora.yaml", true, 200}, Case{"gcn_cora.yaml", false, 200},
                        Case{"gcn_cora_e6m6.yaml", true, 100}}) {
    const std::string name = std::string(c.recipe) + (c.citations ? "" : " without citations");
    INFO(name);
    test::TempDir dir;
    write_synthetic_cora(dir.path(), 60, c.citations);  // 420 nodes
    const std::vector<std::string> sets = {"data.root=" + dir.path(),   "data.val_size=100",
                                           "data.test_size=180",        "logging.progress=off",
                                           "checkpoint.every_epochs=0", "epochs=" + std::to_string(c.epochs)};
    train::Recipe recipe =
        train::load_recipe(std::string(EMUTRAIN_SOURCE_DIR) + "/recipes/" + c.recipe, sets);
    train::TrainOptions options;
    options.out_dir = dir / "run";
    std::ostringstream log;
    options.log = &log;
    train::TrainSummary summary = train::train_recipe(recipe, options);
    INFO(log.str());
    REQUIRE(summary.final_results.count("test"));
    CHECK(summary.final_results["train"].counted == 140);
    CHECK(summary.final_results["test"].counted == 180);
    acc[name] = summary.final_results["test"].accuracy;
    WARN(name << ": test accuracy " << acc[name] << " after " << c.epochs << " epochs, " << summary.seconds
              << " s");
  }
  // The neighbours' features (two of three citations within the class) carry the GCN well past
  // what the node's own features allow; the emulated run gets there too.
  CHECK(acc["gcn_cora.yaml"] >= 0.85);
  CHECK(acc["gcn_cora.yaml without citations"] <= acc["gcn_cora.yaml"] - 0.15);
  CHECK(acc["gcn_cora_e6m6.yaml"] >= 0.8);
}
