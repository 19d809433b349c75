// The `crnn` translator (models/crnn.cpp): built from recipe-like sections in
// its variants (LSTM/GRU, bi/uni-directional, with/without attention, 1-2
// convolutions and layers), a forward and backward pass reach every parameter;
// padding targets are -1; a sentence's logits do not depend, bit for bit, on
// the padding its batch adds (plain fp32 and an emulated policy); the shipped
// recipes parse and build; a small model trained through the fra_eng loader
// and the trainer on a synthetic fra.txt lowers its loss and raises its token
// accuracy.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/autograd.h"
#include "data/registry.h"
#include "tests/test_data_util.h"
#include "tests/test_models_util.h"
#include "tests/test_util.h"
#include "train/recipe.h"
#include "train/trainer.h"

using namespace emu;

namespace {

const models::DataMeta kMeta = {{"src_vocab", 20}, {"tgt_vocab", 15}, {"pad_id", 0}};

struct Pair {
  std::vector<int64_t> src, tgt_in, tgt_out;  // unpadded
};

// Pairs padded into one batch with the fra_eng fields.
data::Batch make_batch(const std::vector<Pair>& pairs) {
  int64_t S = 0, T = 0;
  for (const Pair& p : pairs) {
    S = std::max<int64_t>(S, static_cast<int64_t>(p.src.size()));
    T = std::max<int64_t>(T, static_cast<int64_t>(p.tgt_in.size()));
  }
  const int64_t N = static_cast<int64_t>(pairs.size());
  std::vector<float> src(static_cast<size_t>(N * S), 0.0f), tin(static_cast<size_t>(N * T), 0.0f),
      tout(static_cast<size_t>(N * T), 0.0f), sl, tl;
  for (int64_t n = 0; n < N; ++n) {
    const Pair& p = pairs[static_cast<size_t>(n)];
    for (size_t i = 0; i < p.src.size(); ++i)
      src[static_cast<size_t>(n * S) + i] = static_cast<float>(p.src[i]);
    for (size_t i = 0; i < p.tgt_in.size(); ++i) {
      tin[static_cast<size_t>(n * T) + i] = static_cast<float>(p.tgt_in[i]);
      tout[static_cast<size_t>(n * T) + i] = static_cast<float>(p.tgt_out[i]);
    }
    sl.push_back(static_cast<float>(p.src.size()));
    tl.push_back(static_cast<float>(p.tgt_in.size()));
  }
  data::Batch b;
  b.tensors["src"] = Tensor::from_vector({N, S}, src);
  b.tensors["tgt_in"] = Tensor::from_vector({N, T}, tin);
  b.tensors["tgt_out"] = Tensor::from_vector({N, T}, tout);
  b.tensors["src_len"] = Tensor::from_vector({N}, sl);
  b.tensors["tgt_len"] = Tensor::from_vector({N}, tl);
  b.size = N;
  return b;
}

const std::vector<Pair> kPairs = {
    {{5, 6, 7, 8, 3}, {1, 9, 10, 11}, {9, 10, 11, 2}},
    {{12, 4, 3}, {1, 13}, {13, 2}},
    {{19, 3}, {1, 14, 5}, {14, 5, 2}},
};

}  // namespace

TEST_CASE("crnn: forward and backward reach every parameter, in each variant", "[models][crnn]") {
  const char* variants[] = {
      "{type: crnn, embed_dim: 8, conv_channels: 6, hidden: 5, attention_heads: 2}",
      "{type: crnn, embed_dim: 8, conv_channels: 6, conv_layers: 2, hidden: 6, rnn: gru, bidirectional: "
      "false, "
      "attention: false}",
      "{type: crnn, embed_dim: 8, conv_channels: 6, conv_layers: 0, hidden: 4, layers: 2, dropout: 0.2}",
      "{type: crnn, embed_dim: 8, conv_channels: 6, kernel: 5, hidden: 4, layers: 2, rnn: gru}",
  };
  for (const char* v : variants) {
    INFO(v);
    auto m = test::model_from_yaml(v, kMeta);
    m->train();
    models::Prediction p = m->predict(make_batch(kPairs), "train");
    REQUIRE(p.logits.shape() == Shape{3 * 4, 15});
    Tensor loss = m->loss(p);
    REQUIRE(std::isfinite(loss.item()));
    loss.backward();
    test::GradReport r = test::grad_report(*m);
    INFO("missing: " << test::join(r.missing) << "; non-finite: " << test::join(r.nonfinite));
    CHECK(r.missing.empty());
    CHECK(r.nonfinite.empty());
    std::vector<std::string>
        unexpected;  // k_proj's bias is invisible to the softmax (see the transformer test)
    for (const auto& name : r.all_zero)
      if (name.find("k_proj.bias") == std::string::npos) unexpected.push_back(name);
    INFO("zero gradient: " << test::join(unexpected));
    CHECK(unexpected.empty());
  }
}

TEST_CASE("crnn: targets are tgt_out with the padding as -1", "[models][crnn]") {
  auto m = test::model_from_yaml("{type: crnn, embed_dim: 4, conv_channels: 4, hidden: 4}", kMeta);
  const std::vector<float> t = m->predict(make_batch(kPairs), "train").targets.to_vector();
  const std::vector<float> want = {9, 10, 11, 2, 13, 2, -1, -1, 14, 5, 2, -1};
  CHECK(t == want);
}

TEST_CASE("crnn: a sentence's logits do not depend on its batch's padding", "[models][crnn]") {
  struct Case {
    const char* name;
    NumericsPolicy policy;
  };
  for (const Case& c : {Case{"fp32", NumericsPolicy()},
                        Case{"e6m6 / acc fp32", test::policy({{"format", "e6m6"}, {"acc", "fp32"}})}}) {
    for (const char* v : {"{type: crnn, embed_dim: 8, conv_channels: 6, conv_layers: 2, hidden: 5}",
                          "{type: crnn, embed_dim: 8, conv_channels: 6, hidden: 5, rnn: gru, layers: 2}"}) {
      INFO(c.name << ": " << v);
      auto m = test::model_from_yaml(v, kMeta);
      m->apply_numerics(c.policy);
      m->eval();
      NoGradGuard no_grad;
      // Pair 1 (3 source, 2 target tokens) alone, then padded to 5 / 4 next to pair 0.
      const std::vector<float> alone = m->predict(make_batch({kPairs[1]}), "test").logits.to_vector();
      const std::vector<float> batched =
          m->predict(make_batch({kPairs[0], kPairs[1]}), "test").logits.to_vector();
      REQUIRE(alone.size() == 2 * 15);
      const std::vector<float> rows(batched.begin() + 4 * 15,
                                    batched.begin() + 4 * 15 + 2 * 15);  // n = 1, t < 2
      CHECK(test::mismatch(rows, alone) == "");
    }
  }
}

TEST_CASE("crnn: bad arguments are recipe errors naming the key", "[models][crnn]") {
  CHECK_THROWS_WITH(test::model_from_yaml("{type: crnn, kernel: 4}", kMeta), Catch::Contains("model.kernel"));
  CHECK_THROWS_WITH(test::model_from_yaml("{type: crnn, hidden: 5, attention_heads: 3}", kMeta),
                    Catch::Contains("model.attention_heads"));
  CHECK_THROWS_WITH(test::model_from_yaml("{type: crnn, cell: gru}", kMeta), Catch::Contains("model.cell"));
  CHECK_THROWS_WITH(test::model_from_yaml("{type: crnn}", {{"classes", 3}}), Catch::Contains("src_vocab"));
}

TEST_CASE("crnn: learns a synthetic word-for-word translation through the loader and the trainer",
          "[models][crnn][train]") {
  // fra.txt with 600 pairs: English sentences of 2-5 of 12 words, French = each word's fixed
  // translation, in order, plus the full stop (tab-separated, with the attribution column).
  const char* en[] = {"red",  "blue", "green", "cat", "dog",   "bird",
                      "eats", "sees", "likes", "big", "small", "old"};
  const char* fr[] = {"rouge", "bleu", "vert", "chat",  "chien", "oiseau",
                      "mange", "voit", "aime", "grand", "petit", "vieux"};
  test::TempDir dir;
  test::ByteSource bytes(7);
  std::string text;
  for (int i = 0; i < 600; ++i) {
    const int len = 2 + bytes.next() % 4;
    std::string e, f;
    for (int k = 0; k < len; ++k) {
      const int w = bytes.next() % 12;
      e += std::string(k ? " " : "") + en[w];
      f += std::string(k ? " " : "") + fr[w];
    }
    text += e + ".\t" + f + ".\tCC-BY 2.0 (France) Attribution: tatoeba.org\n";
  }
  test::write_text(dir / "fra.txt", text);

  // The shipped recipes parse and build on this data.
  for (const char* name : {"crnn_fra_eng.yaml", "crnn_fra_eng_e6m6.yaml"}) {
    INFO(name);
    train::Recipe r = train::load_recipe(std::string(EMUTRAIN_SOURCE_DIR) + "/recipes/" + name,
                                         {"data.root=" + dir.path()});
    auto test_set = data::make_dataset(r.root["data"], "test");
    auto m = models::make_model(r.root["model"], test_set->meta());
    m->initialize(0);
    m->apply_numerics(train::numerics_policy(r.root["numerics"]));
    m->eval();
    NoGradGuard no_grad;
    models::Prediction p = m->predict(test_set->get({0, 1, 2}, 0, 0), "test");
    CHECK_FALSE(models::has_nonfinite(p.logits));
  }

  const std::string recipe_text =
      "name: crnn_smoke\n"
      "model: {type: crnn, embed_dim: 16, conv_channels: 16, hidden: 16, dropout: 0}\n"
      "data: {type: fra_eng, root: '" +
      dir.path() +
      "', batch_size: 32, workers: 0, "
      "test_fraction: 0.2}\n"
      "optimizer: {type: adam, lr: 0.01}\n"
      "epochs: 6\nseed: 1\n"
      "logging: {progress: 'off', every_steps: 0}\n"
      "checkpoint: {every_epochs: 0}\n";
  train::Recipe recipe = train::parse_recipe(recipe_text, "<test>");
  train::TrainOptions options;
  options.out_dir = dir / "run";
  std::ostringstream log;
  options.log = &log;
  train::train_recipe(recipe, options);
  INFO(log.str());
  const std::vector<YAML::Node> rows = test::metrics_rows(dir / "run");
  REQUIRE(rows.size() == 6);
  for (size_t e = 1; e < rows.size(); ++e) {
    CHECK(rows[e]["train_loss"].as<double>() < rows[e - 1]["train_loss"].as<double>());
    CHECK(rows[e]["train_acc"].as<double>() > rows[e - 1]["train_acc"].as<double>());
  }
  // Chance is ~1/17 per token; a word-for-word mapping is learnt well within 6 epochs.
  CHECK(rows.back()["test_acc"].as<double>() >= 0.8);
}
