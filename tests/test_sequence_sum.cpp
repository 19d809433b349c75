// A synthetic sequence task trained end to end: the sum of a random-length
// sequence of numbers in [-1, 1] (lengths 1..12, padded to 12 with garbage),
// regressed from the final hidden state of an LSTM or GRU (through its
// variable-length masking) by a linear head. Each run trains twice and must
// give bit-identical weights and losses; the held-out mean squared error must
// fall below a stated bound (0.1, 0.2 under stochastic rounding), far under the
// target's variance (about 2, the error of predicting the mean).
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <random>

#include "core/autograd.h"
#include "layers/gru.h"
#include "layers/linear.h"
#include "layers/loss.h"
#include "layers/lstm.h"
#include "layers/shape_ops.h"
#include "optim/adam.h"

using namespace emu;

namespace {

constexpr int64_t kSteps = 12, kHidden = 16;

struct SumData {
  Tensor x, lengths, target;  // (n, kSteps, 1), (n), (n, 1)
  int64_t n;
  double variance;  // of the target: the MSE of predicting the mean
};

SumData make_data(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return static_cast<float>(rng() >> 40) * 0x1p-24f * 2.0f - 1.0f; };  // exact
  std::vector<float> x, lengths, target;
  double mean = 0, square = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = 1 + static_cast<int64_t>(rng() % kSteps);
    double sum = 0;
    for (int64_t t = 0; t < kSteps; ++t) {
      const float v = uniform();
      x.push_back(t < len ? v : 7.0f + v);  // padding: garbage that would spoil the sum
      if (t < len) sum += v;
    }
    lengths.push_back(static_cast<float>(len));
    target.push_back(static_cast<float>(sum));
    mean += sum;
    square += sum * sum;
  }
  mean /= n;
  return {Tensor::from_vector({n, kSteps, 1}, x), Tensor::from_vector({n}, lengths),
          Tensor::from_vector({n, 1}, target), n, square / n - mean * mean};
}

class SumModel : public Module {
 public:
  explicit SumModel(bool gru) {
    if (gru)
      gru_ = register_module("rnn", std::make_shared<GRU>(1, kHidden));
    else
      lstm_ = register_module("rnn", std::make_shared<LSTM>(1, kHidden));
    head_ = register_module("head", std::make_shared<Linear>(kHidden, 1));
  }
  // x (N, kSteps, 1), lengths (N) -> (N, 1)
  Tensor forward(const Tensor& x, const Tensor& lengths) {
    RecurrentOutput r =
        gru_ ? gru_->forward(x, Tensor(), lengths) : lstm_->forward(x, Tensor(), Tensor(), lengths);
    return head_->forward(reshape(r.h_n, {x.dim(0), kHidden}));
  }

 private:
  std::shared_ptr<LSTM> lstm_;
  std::shared_ptr<GRU> gru_;
  std::shared_ptr<Linear> head_;
};

struct Run {
  std::vector<float> weights, losses;
  double test_mse = 0;
};

Run train(bool gru, const NumericsPolicy& policy, const SumData& data, const SumData& test, int epochs) {
  auto model = std::make_shared<SumModel>(gru);
  model->initialize(5);
  model->apply_numerics(policy);
  auto loss_fn = std::make_shared<MSELoss>();
  loss_fn->apply_numerics(policy);
  Adam opt(model->named_parameters(), AdamOptions{0.02f});
  const int64_t batch = 32;
  Run run;
  for (int e = 0; e < epochs; ++e)
    for (int64_t start = 0; start + batch <= data.n; start += batch) {
      model->train();
      opt.zero_grad();
      Tensor xb = data.x.narrow(0, start, batch).contiguous();
      Tensor lb = data.lengths.narrow(0, start, batch).contiguous();
      Tensor yb = data.target.narrow(0, start, batch).contiguous();
      Tensor loss = loss_fn->forward(model->forward(xb, lb), yb);
      loss.backward();
      opt.step();
      model->context().step += 1;
      run.losses.push_back(loss.item());
    }
  for (auto& [_, p] : model->named_parameters()) {
    std::vector<float> v = p.to_vector();
    run.weights.insert(run.weights.end(), v.begin(), v.end());
  }
  model->eval();
  NoGradGuard no_grad;
  const std::vector<float> pred = model->forward(test.x, test.lengths).to_vector(),
                           want = test.target.to_vector();
  for (int64_t i = 0; i < test.n; ++i)
    run.test_mse += (pred[i] - double(want[i])) * (pred[i] - double(want[i]));
  run.test_mse /= test.n;
  return run;
}

NumericsPolicy policy_of(std::initializer_list<std::pair<const char*, const char*>> kv) {
  NumericsPolicy p;
  for (const auto& [k, v] : kv) p.set(k, v);
  return p;
}

}  // namespace

TEST_CASE("sequence sum: LSTM and GRU learn it, twice to identical bits", "[recurrent][train]") {
  const SumData data = make_data(512, 1), test = make_data(256, 2);
  REQUIRE(test.variance > 2.0);  // lengths 1..12 of uniform(-1, 1): about 6.5 / 3
  struct Case {
    const char* name;
    bool gru;
    NumericsPolicy policy;
    double bound;  // held-out MSE to reach
  };
  const std::vector<Case> cases = {
      {"LSTM fp32", false, NumericsPolicy(), 0.1},
      {"GRU fp32", true, NumericsPolicy(), 0.1},
      {"LSTM bf16 / acc fp32", false, policy_of({{"format", "bf16"}, {"acc", "fp32"}}), 0.1},
      // Stochastic rounding of every result and gradient (draws keyed by layer,
      // direction, time step and training step); products and sums round to nearest.
      {"GRU bf16 / acc fp32, out and grads bf16:sr", true,
       policy_of({{"format", "bf16"}, {"acc", "fp32"}, {"out", "bf16:sr"}, {"grads", "bf16:sr"}}), 0.2},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Run a = train(c.gru, c.policy, data, test, 12);
    Run b = train(c.gru, c.policy, data, test, 12);
    REQUIRE(a.weights.size() == b.weights.size());
    CHECK(std::memcmp(a.weights.data(), b.weights.data(), a.weights.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(a.losses.data(), b.losses.data(), a.losses.size() * sizeof(float)) == 0);
    INFO("held-out MSE " << a.test_mse << " (target variance " << test.variance << "), first loss "
                         << a.losses.front() << ", last " << a.losses.back());
    CHECK(a.test_mse < c.bound);
  }
}
