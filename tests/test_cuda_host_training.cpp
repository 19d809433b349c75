// The CUDA backend trains: a small MLP (Linear, ReLU, Linear, softmax
// cross-entropy, SGD with momentum) under a policy with stochastic rounding runs
// 20 steps on `device: cuda-host` (the CUDA kernels executed on the CPU by the
// host executor) and on the CPU reference, and every loss and every weight after
// every step must have the same bits. The CPU backend is the independent
// reference: it shares no kernel code with backends/cuda/ops, only the numerics
// definitions both call.
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/register.h"
#include "core/device_select.h"
#include "optim/sgd.h"
#include "tests/test_models_util.h"
#include "tests/test_util.h"

using namespace emu;

namespace {

float wave(int64_t i) {  // deterministic values in [-1, 1) without libm
  const int64_t r = (i * 7919 + 13) % 2003;
  return static_cast<float>(r - 1001) / 1002.0f;
}

data::Batch batch(int64_t step, Device device) {
  const int64_t n = 8, features = 12, classes = 5;
  std::vector<float> x(static_cast<size_t>(n * features)), y(static_cast<size_t>(n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = wave(static_cast<int64_t>(i) + 977 * step);
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = static_cast<float>((i * 3 + step) % classes);
  data::Batch b;
  b.tensors["x"] = Tensor::from_vector({n, 1, 3, 4}, x).to(device);
  b.tensors["y"] = Tensor::from_vector({n}, y).to(device);
  b.size = n;
  return b;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("an MLP trains 20 steps on cuda-host with the CPU's bits", "[cuda_host][train]") {
  register_cuda_devices();
  REQUIRE(activate_device("cuda-host") == Device::Cuda);
  const char* yaml = "{type: mlp, hidden: [16], activation: relu}";
  const models::DataMeta meta = {
      {"channels", 1}, {"height", 3}, {"width", 4}, {"features", 12}, {"classes", 5}};
  const NumericsPolicy policy = test::policy({{"format", "bf16"}, {"acc", "fp32"}, {"grads", "e5m2:sr"}});

  std::shared_ptr<models::Model> cpu = test::model_from_yaml(yaml, meta, 11);
  std::shared_ptr<models::Model> dev = test::model_from_yaml(yaml, meta, 11);
  cpu->apply_numerics(policy);
  dev->apply_numerics(policy);
  dev->to(Device::Cuda);
  for (const auto& [name, t] : dev->named_parameters()) {
    INFO(name);
    REQUIRE(t.device() == Device::Cuda);
    CHECK_THROWS_WITH(t.data(), Catch::Contains("data()") && Catch::Contains("cuda"));
  }

  SgdOptions o;
  o.lr = 0.05f;
  o.momentum = 0.9f;
  SGD opt_cpu(cpu->named_parameters(), o), opt_dev(dev->named_parameters(), o);
  cpu->train();
  dev->train();
  int compared = 0;
  for (int64_t step = 0; step < 20; ++step) {
    Tensor losses[2];
    int i = 0;
    for (auto [m, opt, device] : {std::make_tuple(cpu.get(), &opt_cpu, Device::Cpu),
                                  std::make_tuple(dev.get(), &opt_dev, Device::Cuda)}) {
      opt->zero_grad();
      models::Prediction p = m->predict(batch(step, device), "train");
      Tensor loss = m->loss(p);
      REQUIRE(loss.device() == device);
      loss.backward();
      opt->step();
      m->context().step += 1;
      losses[i++] = loss;
    }
    INFO("step " << step);
    REQUIRE(same_bits(losses[0].to_vector(), losses[1].to_vector()));
    const auto pc = cpu->named_parameters(), pd = dev->named_parameters();
    REQUIRE(pc.size() == pd.size());
    for (size_t k = 0; k < pc.size(); ++k) {
      INFO(pc[k].first);
      REQUIRE(pc[k].first == pd[k].first);
      REQUIRE(pd[k].second.device() == Device::Cuda);
      REQUIRE(same_bits(pc[k].second.to_vector(), pd[k].second.to_vector()));
      ++compared;
    }
  }
  CHECK(compared == 20 * 4);  // two Linear layers: weight and bias each
}
