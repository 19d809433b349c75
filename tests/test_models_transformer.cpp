// The `transformer` model (models/transformer.cpp, the Keras time-series
// Transformer): built from a recipe-like section, a forward and backward pass
// reach every parameter; the pooling follows Keras' channels_first global
// average (a mean over the features of each step); the shipped recipes parse
// and build; a reduced configuration trains a few steps through the real UCR
// loader and the trainer on FordA-format files the test writes.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/autograd.h"
#include "data/registry.h"
#include "tests/test_data_util.h"
#include "tests/test_models_util.h"
#include "tests/test_recipe_data.h"
#include "train/checkpoint.h"
#include "train/recipe.h"
#include "train/trainer.h"

using namespace emu;

namespace {

const models::DataMeta kMeta = {{"channels", 3}, {"length", 10}, {"classes", 4}};

// (N, T, C) with a deterministic pattern, and labels (N).
data::Batch series_batch(int64_t n, int64_t t, int64_t c) {
  std::vector<float> x;
  std::vector<float> y;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t s = 0; s < t; ++s)
      for (int64_t k = 0; k < c; ++k)
        x.push_back(static_cast<float>(std::sin(0.37 * static_cast<double>(i * 31 + s * 7 + k * 3))));
    y.push_back(static_cast<float>(i % 4));
  }
  data::Batch b;
  b.tensors["x"] = Tensor::from_vector({n, t, c}, x);
  b.tensors["y"] = Tensor::from_vector({n}, y);
  b.size = n;
  return b;
}

}  // namespace

TEST_CASE("transformer: forward and backward reach every parameter", "[models][transformer]") {
  auto m = test::model_from_yaml(
      "{type: transformer, num_blocks: 2, head_size: 8, num_heads: 2, ff_dim: 4, mlp_units: [16, 8], "
      "dropout: 0.1}",
      kMeta);
  m->train();
  const data::Batch b = series_batch(5, 10, 3);
  models::Prediction p = m->predict(b, "train");
  REQUIRE(p.logits.shape() == Shape{5, 4});
  Tensor loss = m->loss(p);
  REQUIRE(std::isfinite(loss.item()));
  loss.backward();
  test::GradReport r = test::grad_report(*m);
  INFO("missing: " << test::join(r.missing) << "; non-finite: " << test::join(r.nonfinite));
  CHECK(r.missing.empty());
  CHECK(r.nonfinite.empty());
  // Adding one vector to every key shifts all scores of a query equally: the softmax cannot
  // see k_proj's bias, so its gradient is zero up to rounding. Every other parameter moves the loss.
  std::vector<std::string> unexpected;
  for (const auto& name : r.all_zero)
    if (name.find("k_proj.bias") == std::string::npos) unexpected.push_back(name);
  INFO("zero gradient: " << test::join(unexpected));
  CHECK(unexpected.empty());
  // Structure: the Keras sizes (E = C, heads x head_size inner width, C -> ff_dim -> C).
  std::map<std::string, Shape> shapes;
  for (const auto& [name, t] : m->named_parameters()) shapes[name] = t.shape();
  CHECK(shapes.at("block0.self_attn.q_proj.weight") == Shape{16, 3});
  CHECK(shapes.at("block0.self_attn.out_proj.weight") == Shape{3, 16});
  CHECK(shapes.at("block1.linear1.weight") == Shape{4, 3});
  CHECK(shapes.at("block1.linear2.weight") == Shape{3, 4});
  CHECK(shapes.at("mlp0.weight") == Shape{16, 10});  // pool: features -> (N, T)
  CHECK(shapes.at("head.weight") == Shape{4, 8});
}

TEST_CASE("transformer: pool features averages each step's features, as Keras channels_first",
          "[models][transformer]") {
  // With no blocks and no MLP the model is head(pool(x)): compare against the float64 mean over C.
  auto m = test::model_from_yaml("{type: transformer, num_blocks: 0, mlp_units: []}", kMeta);
  m->eval();
  NoGradGuard no_grad;
  const data::Batch b = series_batch(3, 10, 3);
  const std::vector<float> logits = m->predict(b, "test").logits.to_vector();
  const auto named = m->named_parameters();
  std::map<std::string, Tensor> params(named.begin(), named.end());
  const std::vector<float> w = params.at("head.weight").to_vector(),
                           bias = params.at("head.bias").to_vector();
  const std::vector<float> x = b.at("x").to_vector();
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t k = 0; k < 4; ++k) {
      double want = bias[static_cast<size_t>(k)];
      for (int64_t t = 0; t < 10; ++t) {
        double mean = 0;
        for (int64_t c = 0; c < 3; ++c) mean += x[static_cast<size_t>((n * 10 + t) * 3 + c)];
        want += w[static_cast<size_t>(k * 10 + t)] * (mean / 3);
      }
      CHECK(logits[static_cast<size_t>(n * 4 + k)] == Approx(want).margin(1e-5));
    }
  // pool: time averages over the steps instead: the head then sees C = 3 inputs.
  auto t = test::model_from_yaml("{type: transformer, num_blocks: 0, mlp_units: [], pool: time}", kMeta);
  CHECK(t->named_parameters().front().second.shape() == Shape{4, 3});
}

TEST_CASE("transformer: bad arguments are recipe errors naming the key", "[models][transformer]") {
  CHECK_THROWS_WITH(test::model_from_yaml("{type: transformer, heads: 4}", kMeta),
                    Catch::Contains("model.heads") && Catch::Contains("num_heads"));
  CHECK_THROWS_WITH(test::model_from_yaml("{type: transformer, pool: max}", kMeta),
                    Catch::Contains("model.pool"));
}

TEST_CASE("transformer: trains a few steps on UCR files through the loader and the trainer",
          "[models][transformer][train]") {
  test::TempDir dir;
  test::write_ucr(dir / "FordA_TRAIN.tsv", 48, 24, 1);
  test::write_ucr(dir / "FordA_TEST.tsv", 16, 24, 2);

  // The shipped recipes parse, and build on this data (the full-size model: one forward pass).
  for (const char* name : {"transformer_forda.yaml", "transformer_forda_e6m6.yaml"}) {
    INFO(name);
    train::Recipe r = train::load_recipe(std::string(EMUTRAIN_SOURCE_DIR) + "/recipes/" + name,
                                         {"data.root=" + dir.path()});
    auto test_set = data::make_dataset(r.root["data"], "test");
    auto m = models::make_model(r.root["model"], test_set->meta());
    m->initialize(0);
    m->apply_numerics(train::numerics_policy(r.root["numerics"]));
    m->eval();
    NoGradGuard no_grad;
    models::Prediction p = m->predict(test_set->get({0, 1}, 0, 0), "test");
    CHECK(p.logits.shape() == Shape{2, 2});
    CHECK_FALSE(models::has_nonfinite(p.logits));
  }

  // A reduced configuration through the trainer.
  const std::string recipe_text =
      "name: smoke\n"
      "model: {type: transformer, num_blocks: 1, head_size: 16, num_heads: 2, ff_dim: 4, "
      "mlp_units: [32], dropout: 0.1, mlp_dropout: 0.1}\n"
      "data: {type: ucr, name: FordA, root: '" +
      dir.path() +
      "', batch_size: 16, workers: 0}\n"
      "optimizer: {type: adam, lr: 0.003}\n"
      "epochs: 3\nseed: 5\n"
      "logging: {progress: 'off', every_steps: 0}\n"
      "checkpoint: {every_epochs: 0}\n";
  train::Recipe recipe = train::parse_recipe(recipe_text, "<test>");
  train::TrainOptions options;
  options.out_dir = dir / "run";
  std::ostringstream log;
  options.log = &log;
  train::TrainSummary s = train::train_recipe(recipe, options);
  INFO(log.str());
  CHECK(s.steps == 9);  // 3 epochs of 48 / 16 batches
  REQUIRE(s.final_results.count("test"));
  CHECK(std::isfinite(s.final_results["train"].loss));
  CHECK(std::isfinite(s.final_results["test"].loss));
  CHECK(s.final_results["test"].counted == 16);

  // The final weights differ from the initial ones (same seed) and are finite.
  auto train_set = data::make_dataset(recipe.root["data"], "train");
  auto initial = models::make_model(recipe.root["model"], train_set->meta());
  initial->initialize(5);
  auto trained = models::make_model(recipe.root["model"], train_set->meta());
  train::load_checkpoint(s.final_checkpoint, *trained, nullptr);
  const auto before = test::parameter_values(*initial), after = test::parameter_values(*trained);
  int changed = 0;
  for (const auto& [name, v] : after) {
    for (float f : v) CHECK(std::isfinite(f));
    if (v != before.at(name)) ++changed;
  }
  CHECK(before.size() == after.size());
  // The MLP and the head always move; with one channel the LayerNorms output their bias
  // only (the normalised value of one feature is 0), so not every block weight needs to.
  CHECK(after.at("mlp0.weight") != before.at("mlp0.weight"));
  CHECK(after.at("head.weight") != before.at("head.weight"));
  CHECK(changed >= static_cast<int>(after.size()) / 2);
}
