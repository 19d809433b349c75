// A small MLP and a small CNN train on synthetic data, twice, with bit-identical
// weights after every step, in plain fp32 and under emulated policies
// (stochastic rounding and dropout included, whose draws are keyed by
// seed, layer path and step).
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "core/autograd.h"
#include "layers/activation.h"
#include "layers/batchnorm.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/linear.h"
#include "layers/loss.h"
#include "layers/pool.h"
#include "layers/sequential.h"
#include "layers/shape_ops.h"
#include "optim/adam.h"
#include "optim/sgd.h"

using namespace emu;

namespace {

struct Dataset {
  Tensor x, y;  // x: (N, ...), y: (N) class indices as floats
  int64_t n;
};

// Three Gaussian blobs in 8 dimensions.
Dataset blobs(int64_t n) {
  std::mt19937_64 rng(1);
  std::normal_distribution<float> noise(0, 0.6f);
  std::vector<float> x, y;
  for (int64_t i = 0; i < n; ++i) {
    int c = static_cast<int>(i % 3);
    for (int d = 0; d < 8; ++d) x.push_back((d % 3 == c ? 1.5f : -0.5f) + noise(rng));
    y.push_back(static_cast<float>(c));
  }
  return {Tensor::from_vector({n, 8}, x), Tensor::from_vector({n}, y), n};
}

// 1x8x8 images holding a horizontal (class 0) or vertical (class 1) bar.
Dataset bars(int64_t n) {
  std::mt19937_64 rng(2);
  std::normal_distribution<float> noise(0, 0.3f);
  std::vector<float> x, y;
  for (int64_t i = 0; i < n; ++i) {
    int c = static_cast<int>(i % 2), at = static_cast<int>(rng() % 8);
    for (int r = 0; r < 8; ++r)
      for (int col = 0; col < 8; ++col) x.push_back(((c == 0 ? r : col) == at ? 1.0f : 0.0f) + noise(rng));
    y.push_back(static_cast<float>(c));
  }
  return {Tensor::from_vector({n, 1, 8, 8}, x), Tensor::from_vector({n}, y), n};
}

std::shared_ptr<Sequential> mlp() {
  auto m = std::make_shared<Sequential>();
  m->push_back(std::make_shared<Linear>(8, 32));
  m->push_back(std::make_shared<ReLU>());
  m->push_back(std::make_shared<Dropout>(0.1f));
  m->push_back(std::make_shared<Linear>(32, 3));
  return m;
}

std::shared_ptr<Sequential> cnn() {
  auto m = std::make_shared<Sequential>();
  m->push_back(std::make_shared<Conv2d>(1, 4, 3, 1, 1));
  m->push_back(std::make_shared<BatchNorm2d>(4));
  m->push_back(std::make_shared<ReLU>());
  m->push_back(std::make_shared<MaxPool2d>(2));
  m->push_back(std::make_shared<Flatten>());
  m->push_back(std::make_shared<Linear>(4 * 4 * 4, 2));
  return m;
}

struct Run {
  std::vector<std::vector<float>> weights_per_step;  // all parameters, concatenated
  std::vector<float> losses;
  double accuracy = 0;
};

Run train(std::shared_ptr<Sequential> model, const Dataset& data, const NumericsPolicy& policy, bool adam,
          int steps, int64_t batch) {
  model->initialize(42);
  model->apply_numerics(policy);
  auto loss_fn = std::make_shared<CrossEntropyLoss>();
  loss_fn->apply_numerics(policy);
  std::unique_ptr<Optimizer> opt;
  if (adam)
    opt = std::make_unique<Adam>(model->named_parameters(), AdamOptions{0.01f});
  else {
    SgdOptions o;
    o.lr = 0.1f;
    o.momentum = 0.9f;
    opt = std::make_unique<SGD>(model->named_parameters(), o);
  }
  Run run;
  for (int s = 0; s < steps; ++s) {
    int64_t start = (s * batch) % data.n;
    Tensor xb = data.x.narrow(0, start, batch).contiguous();
    Tensor yb = data.y.narrow(0, start, batch).contiguous();
    model->train();
    opt->zero_grad();
    Tensor loss = loss_fn->forward(model->forward(xb), yb);
    loss.backward();
    opt->step();
    model->context().step += 1;
    run.losses.push_back(loss.item());
    std::vector<float> all;
    for (auto& [_, p] : model->named_parameters()) {
      std::vector<float> v = p.to_vector();
      all.insert(all.end(), v.begin(), v.end());
    }
    run.weights_per_step.push_back(all);
  }
  model->eval();
  NoGradGuard no_grad;
  std::vector<float> logits = model->forward(data.x).to_vector(), labels = data.y.to_vector();
  int64_t classes = static_cast<int64_t>(logits.size()) / data.n, right = 0;
  for (int64_t i = 0; i < data.n; ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (logits[i * classes + c] > logits[i * classes + best]) best = c;
    right += best == static_cast<int64_t>(labels[i]);
  }
  run.accuracy = static_cast<double>(right) / data.n;
  return run;
}

void check_identical(const Run& a, const Run& b) {
  REQUIRE(a.weights_per_step.size() == b.weights_per_step.size());
  for (size_t s = 0; s < a.weights_per_step.size(); ++s) {
    const auto& wa = a.weights_per_step[s];
    const auto& wb = b.weights_per_step[s];
    INFO("step " << s);
    REQUIRE(wa.size() == wb.size());
    REQUIRE(std::memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)) == 0);
  }
  CHECK(std::memcmp(a.losses.data(), b.losses.data(), a.losses.size() * sizeof(float)) == 0);
}

NumericsPolicy policy_of(std::vector<std::pair<std::string, std::string>> kv) {
  NumericsPolicy p;
  for (auto& [k, v] : kv) p.set(k, v);
  return p;
}

}  // namespace

TEST_CASE("an MLP trains twice to identical bits", "[train]") {
  Dataset data = blobs(240);
  const std::vector<std::pair<const char*, NumericsPolicy>> policies = {
      {"fp32", NumericsPolicy()},
      {"bf16 / acc fp32", policy_of({{"format", "bf16"}, {"acc", "fp32"}})},
      {"e5m2:sr / acc e6m9:sr", policy_of({{"format", "e5m2:sr"}, {"acc", "e6m9:sr"}})},
  };
  for (auto& [name, policy] : policies) {
    for (bool adam : {false, true}) {
      INFO(name << (adam ? " adam" : " sgd"));
      Run a = train(mlp(), data, policy, adam, 60, 24);
      Run b = train(mlp(), data, policy, adam, 60, 24);
      check_identical(a, b);
      CHECK(a.accuracy >= 0.9);
      CHECK(a.losses.back() < a.losses.front());
    }
  }
}

TEST_CASE("a CNN trains twice to identical bits", "[train]") {
  Dataset data = bars(96);
  const std::vector<std::pair<const char*, NumericsPolicy>> policies = {
      {"fp32", NumericsPolicy()},
      {"e6m6 / acc fp32", policy_of({{"format", "e6m6"}, {"acc", "fp32"}})},
      {"fp16:sr", policy_of({{"format", "fp16:sr"}})},
  };
  for (auto& [name, policy] : policies) {
    INFO(name);
    Run a = train(cnn(), data, policy, false, 30, 16);
    Run b = train(cnn(), data, policy, false, 30, 16);
    check_identical(a, b);
    CHECK(a.accuracy >= 0.9);
  }
}

TEST_CASE("stochastic rounding really draws: its trajectory differs from round-to-nearest", "[train]") {
  Dataset data = blobs(48);
  Run sr = train(mlp(), data, policy_of({{"format", "e5m2:sr"}}), false, 3, 24);
  Run rne = train(mlp(), data, policy_of({{"format", "e5m2"}}), false, 3, 24);
  CHECK(std::memcmp(sr.weights_per_step.back().data(), rne.weights_per_step.back().data(),
                    sr.weights_per_step.back().size() * sizeof(float)) != 0);
}
