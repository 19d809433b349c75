// The device-complete engine, proven on the mirror backend (tests/mirror_backend.h):
// tensors of Device::Cuda in host memory whose ops are the CPU reference's, so any
// engine code that reads or writes tensor memory itself, or hands an op a tensor of
// the wrong device, throws; and every result must be the CPU's bit for bit.
//   (a) Tensor::data() on a device tensor throws and names the call;
//   (b) transfers, copies and fills round-trip, non-contiguous views included;
//   (c) every model family of the pinned set trains on the mirror with every loss,
//       logit, parameter and buffer bit-identical to the CPU, under the five pinned
//       policies and a user sparsity score (host code on downloaded values), with
//       gradient clipping, and under emulated data parallelism;
//   (d) a checkpoint saved on one device continues bit-identically on the other;
//   (e) Module::to keeps the handles: an optimizer made before it updates the moved
//       parameters, and its state follows them;
//   (f) the trainer: `device: cuda-host` (the mirror here) trains, evaluates and
//       resumes on the CPU with the CPU's bits; an unusable device is a recipe error.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "core/autograd.h"
#include "core/comm_reduce.h"
#include "core/device_select.h"
#include "layers/gcn.h"
#include "layers/index_select.h"
#include "layers/loss.h"
#include "layers/temporal_pool.h"
#include "models/model.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "tests/mirror_backend.h"
#include "tests/pinned_cases.h"
#include "tests/test_models_util.h"
#include "tests/test_trainer_data.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

using namespace emu;
using namespace emu::test::pinned;
using Catch::Matchers::Contains;

namespace {

constexpr Device kMirror = Device::Cuda;

// "" when a and b hold the same bits (shape included), else the first difference.
std::string bit_difference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return "shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape());
  return test::mismatch(a.to_vector(), b.to_vector());
}

data::Batch on_device(data::Batch b, Device d) {
  for (auto& [_, t] : b.tensors) t = t.to(d);
  for (auto& [_, m] : b.sparse) m = std::make_shared<const CsrMatrix>(csr_with_values(*m, m->values.to(d)));
  return b;
}

// Everything a few training steps produce: losses, the last logits, and every parameter and
// buffer after each step, downloaded.
struct Trace {
  std::vector<float> losses;
  std::vector<float> logits;
  std::vector<std::vector<std::pair<std::string, std::vector<float>>>> states;
};

void record_state(const models::Model& m, Trace& t) {
  std::vector<std::pair<std::string, std::vector<float>>> s;
  for (const auto& [name, p] : m.state_dict()) {
    REQUIRE(p.device() == m.parameters().front().device());
    s.emplace_back(name, p.to_vector());
  }
  t.states.push_back(std::move(s));
}

// `steps` SGD-with-momentum steps with gradient clipping on `device`. The optimizer is made
// before Module::to, so its state must follow the parameters.
Trace train_steps(const ModelCase& mc, const NumericsPolicy& policy, Device device, int steps) {
  std::shared_ptr<models::Model> m = test::model_from_yaml(mc.yaml, mc.meta, 7);
  m->apply_numerics(policy);
  SgdOptions o;
  o.lr = 0.05f;
  o.momentum = 0.9f;
  SGD opt(m->named_parameters(), o);
  m->to(device);
  REQUIRE(m->parameters().front().device() == device);
  const data::Batch b = on_device(mc.batch(), device);
  Trace t;
  m->train();
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    models::Prediction p = m->predict(b, "train");
    Tensor loss = m->loss(p);
    loss.backward();
    clip_grad_norm(m->named_parameters(), 0.5);
    opt.step();
    m->context().step += 1;
    t.losses.push_back(loss.item());
    t.logits = p.logits.to_vector();
    record_state(*m, t);
  }
  return t;
}

void require_same(const Trace& cpu, const Trace& dev) {
  REQUIRE(cpu.losses.size() == dev.losses.size());
  CHECK(test::mismatch(dev.losses, cpu.losses) == "");
  CHECK(test::mismatch(dev.logits, cpu.logits) == "");
  for (size_t s = 0; s < cpu.states.size(); ++s)
    for (size_t i = 0; i < cpu.states[s].size(); ++i) {
      INFO("step " << s + 1 << ", " << cpu.states[s][i].first);
      REQUIRE(dev.states[s][i].first == cpu.states[s][i].first);
      CHECK(test::mismatch(dev.states[s][i].second, cpu.states[s][i].second) == "");
    }
}

}  // namespace

TEST_CASE("Tensor::data() on a device tensor throws, naming the call", "[device]") {
  test::install_mirror();
  Tensor t = Tensor::zeros({2, 3}, kMirror);
  CHECK_THROWS_AS(t.data(), std::logic_error);
  CHECK_THROWS_WITH(t.data(), Contains("Tensor::data()") && Contains("cuda") && Contains("(2, 3)"));
  const Tensor& c = t;
  CHECK_THROWS_WITH(c.data(), Contains("Tensor::data()"));
  CHECK_THROWS_WITH(t.transpose(0, 1).data(), Contains("Tensor::data()"));
  // The CPU reference reaches memory through data(), so a device tensor handed to it throws too.
  CHECK_THROWS_AS(default_cpu_backend().fill(t, 1.0f), std::logic_error);
  // And the mirror refuses a CPU operand: a host tensor that never reached the device.
  Tensor host = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH(test::install_mirror().copy(host, t), Contains("op copy") && Contains("cpu tensor"));
}

TEST_CASE("transfers, copies and fills round-trip on a device, views included", "[device]") {
  test::install_mirror();
  // Bits that a lax copy would lose: a NaN payload, signed zeros, infinities, a subnormal.
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f - 3.0f;
  uint32_t payload = 0x7fc01234u;
  std::memcpy(&v[1], &payload, 4);
  v[2] = -0.0f;
  v[3] = std::numeric_limits<float>::infinity();
  v[4] = -std::numeric_limits<float>::denorm_min();
  // The independent reference: row-major indexing of the host vector.
  auto at = [&](int64_t a, int64_t b, int64_t c) { return v[static_cast<size_t>((a * 3 + b) * 4 + c)]; };

  const Tensor h = Tensor::from_vector({2, 3, 4}, v);
  const Tensor d = Tensor::from_vector({2, 3, 4}, v, kMirror);
  REQUIRE(d.device() == kMirror);
  CHECK(test::mismatch(d.to_vector(), v) == "");
  CHECK(test::mismatch(h.to(kMirror).to(Device::Cpu).to_vector(), v) == "");
  CHECK(d.to(kMirror).same(d));  // already there: the tensor itself

  // A non-contiguous device view downloads in its logical order.
  const Tensor dv = d.transpose(0, 2).narrow(1, 1, 2);  // (4, 2, 2): element (c, b-1, a)
  std::vector<float> want;
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t b = 1; b < 3; ++b)
      for (int64_t a = 0; a < 2; ++a) want.push_back(at(a, b, c));
  CHECK(test::mismatch(dv.to_vector(), want) == "");
  CHECK(test::mismatch(dv.contiguous().to_vector(), want) == "");
  CHECK(dv.clone().device() == kMirror);
  CHECK(dv.to(Device::Cpu).is_contiguous());
  CHECK(test::mismatch(dv.to(Device::Cpu).to_vector(), want) == "");

  // copy_from between views on one device, and across devices in both directions.
  Tensor e = Tensor::zeros({4, 2, 2}, kMirror);
  e.transpose(0, 1).copy_from(dv.transpose(0, 1));
  CHECK(test::mismatch(e.to_vector(), want) == "");
  Tensor f = Tensor::zeros({2, 4, 2}, kMirror);
  f.transpose(0, 1).copy_from(h.transpose(0, 2).narrow(1, 1, 2));  // host view -> device view
  CHECK(test::mismatch(f.transpose(0, 1).to_vector(), want) == "");
  Tensor g = Tensor::zeros({2, 4, 2});
  g.transpose(0, 1).copy_from(dv);  // device view -> host view
  CHECK(test::mismatch(g.transpose(0, 1).to_vector(), want) == "");

  // fill on a strided view writes exactly its elements.
  Tensor z = Tensor::from_vector({2, 3, 4}, v, kMirror);
  z.narrow(2, 1, 2).fill(-0.0f);
  std::vector<float> filled = v;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 1; c < 3; ++c) filled[static_cast<size_t>((a * 3 + b) * 4 + c)] = -0.0f;
  CHECK(test::mismatch(z.to_vector(), filled) == "");
  CHECK(test::bits(Tensor::full({}, 2.5f, kMirror).item()) == test::bits(2.5f));
  CHECK(test::bits(d.narrow(0, 1, 1).narrow(1, 2, 1).narrow(2, 3, 1).item()) == test::bits(at(1, 2, 3)));
}

TEST_CASE("every model family trains on a device with the CPU's bits", "[device][models]") {
  test::install_mirror();
  std::vector<PolicyCase> policies = policy_cases();
  // N:M masks from a user score function: host code on the downloaded master, scores uploaded.
  policies.push_back({"2:4 user score", [] {
                        return test::policy({{"format", "e6m6"},
                                             {"acc", "fp32"},
                                             {"sparsity", "2:4"},
                                             {"sparsity_on", "both"},
                                             {"sparsity_score", "row_relative_magnitude"}});
                      }});
  for (const ModelCase& mc : model_cases())
    for (const PolicyCase& pc : policies) {
      INFO(mc.name << " under " << pc.name);
      const Trace cpu = train_steps(mc, pc.make(), Device::Cpu, 2);
      const Trace dev = train_steps(mc, pc.make(), kMirror, 2);
      require_same(cpu, dev);
    }
}

TEST_CASE("emulated data parallelism splits reductions on a device as on the CPU", "[device][parallel]") {
  test::install_mirror();
  // Two virtual ranks: weight-gradient reductions run per rank share (rows and samples outside a
  // share zeroed on the device) and are combined on the host.
  struct Restore {
    DataParallelConfig saved = data_parallel();
    ~Restore() { set_data_parallel(saved); }
  } restore;
  DataParallelConfig c;
  c.mode = DataParallelConfig::Mode::Emulate;
  c.ranks = 2;
  set_data_parallel(c);
  for (const ModelCase& mc : model_cases()) {
    const std::string name = mc.name;
    if (name != "resnet18" && name != "mlp") continue;  // conv and linear reductions over even batches
    INFO(name);
    const NumericsPolicy p = test::policy({{"format", "e6m6"}, {"acc", "fp32"}});
    require_same(train_steps(mc, p, Device::Cpu, 2), train_steps(mc, p, kMirror, 2));
  }
}

TEST_CASE("a checkpoint saved on one device continues bit-identically on the other", "[device][checkpoint]") {
  test::install_mirror();
  test::TempDir dir;
  const ModelCase& mc = model_cases()[1];  // resnet18: batch-norm buffers, a counter among them
  REQUIRE(std::string(mc.name) == "resnet18");
  const NumericsPolicy policy = policy_cases()[2].make();  // stochastic rounding keyed by the step
  struct Run {
    std::shared_ptr<models::Model> m;
    std::unique_ptr<Adam> opt;
    data::Batch b;
  };
  auto start = [&](Device d) {
    Run r;
    r.m = test::model_from_yaml(mc.yaml, mc.meta, 7);
    r.m->apply_numerics(policy);
    r.m->to(d);
    AdamOptions o;
    o.lr = 0.01f;
    r.opt = std::make_unique<Adam>(r.m->named_parameters(), o);
    r.b = on_device(mc.batch(), d);
    r.m->train();
    return r;
  };
  auto step = [](Run& r, uint64_t s) {
    r.m->context().step = s;
    r.opt->zero_grad();
    Tensor loss = r.m->loss(r.m->predict(r.b, "train"));
    loss.backward();
    r.opt->step();
    return loss.item();
  };
  // The reference: four uninterrupted steps on the CPU.
  Run ref = start(Device::Cpu);
  std::vector<float> ref_losses;
  for (uint64_t s = 0; s < 4; ++s) ref_losses.push_back(step(ref, s));

  for (Device first : {kMirror, Device::Cpu}) {
    const Device second = first == kMirror ? Device::Cpu : kMirror;
    INFO("saved on " << device_name(first) << ", resumed on " << device_name(second));
    Run a = start(first);
    std::vector<float> losses = {step(a, 0), step(a, 1)};
    const std::string path = dir.str() + "/mid-" + device_name(first) + ".safetensors";
    train::save_checkpoint(path, *a.m, a.opt.get(), train::CheckpointState{});
    Run b = start(second);
    train::load_checkpoint(path, *b.m, b.opt.get());
    losses.push_back(step(b, 2));
    losses.push_back(step(b, 3));
    CHECK(test::mismatch(losses, ref_losses) == "");
    const std::map<std::string, Tensor> want = ref.m->state_dict(), got = b.m->state_dict();
    for (const auto& [name, t] : want) {
      INFO(name);
      CHECK(got.at(name).device() == second);
      CHECK(bit_difference(got.at(name), t) == "");
    }
    const std::map<std::string, Tensor> want_opt = ref.opt->state_dict(), got_opt = b.opt->state_dict();
    for (const auto& [name, t] : want_opt) {
      INFO("optimizer." << name);
      CHECK(bit_difference(got_opt.at(name), t) == "");
    }
  }
}

TEST_CASE("Module::to keeps handles; optimizer state follows its parameters", "[device]") {
  test::install_mirror();
  const ModelCase& mc = model_cases().back();  // the MLP
  REQUIRE(std::string(mc.name) == "mlp");
  std::shared_ptr<models::Model> m = test::model_from_yaml(mc.yaml, mc.meta, 7);
  AdamOptions o;
  o.lr = 0.01f;
  Adam opt(m->named_parameters(), o);               // made while the parameters are on the CPU
  Tensor w = m->named_parameters().front().second;  // a handle held across the move
  const std::vector<float> before = w.to_vector();
  // A gradient that exists before the move moves with its parameter.
  Tensor loss = m->loss(m->predict(mc.batch(), "train"));
  loss.backward();
  REQUIRE(w.grad().defined());
  m->to(kMirror);
  CHECK(w.device() == kMirror);
  CHECK(w.grad().device() == kMirror);
  CHECK(w.same(m->named_parameters().front().second));
  CHECK(test::mismatch(w.to_vector(), before) == "");  // moved, not changed
  for (const auto& [name, b] : m->named_buffers()) CHECK(b.device() == kMirror);

  opt.zero_grad();
  loss = m->loss(m->predict(on_device(mc.batch(), kMirror), "train"));
  loss.backward();
  opt.step();
  CHECK(test::mismatch(w.to_vector(), before) != "");  // the optimizer updated the moved tensor
  for (const auto& [name, t] : opt.state_dict())
    if (name.find("exp_avg") != std::string::npos) CHECK(t.device() == kMirror);
}

TEST_CASE("host-made indices, masks and targets meet their tensors on the device", "[device][layers]") {
  test::install_mirror();
  Module m;
  const Tensor x = pattern({3, 4, 2}, 5);  // (N, T, C)
  const Tensor xd = x.to(kMirror);
  const Tensor lengths = Tensor::from_vector({3}, {4, 1, 2});
  // Rows picked by host-built indices (a CPU index is uploaded by index_select).
  CHECK(bit_difference(last_valid_step(m, xd, lengths.to(kMirror)), last_valid_step(m, x, lengths)) == "");
  const Tensor idx = Tensor::from_vector({2}, {3, 0});
  const Tensor picked = index_select(m, xd, 1, idx);
  CHECK(picked.device() == kMirror);
  CHECK(bit_difference(picked, index_select(m, x, 1, idx)) == "");
  // A mask built on the host from device lengths lands on their device.
  const Tensor mask = lengths_mask(lengths.to(kMirror), 4);
  CHECK(mask.device() == kMirror);
  CHECK(test::mismatch(mask.to_vector(), {1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0}) == "");
  // Integer targets go to the logits' device.
  const Tensor logits = pattern({3, 5}, 6);
  CHECK(bit_difference(cross_entropy(m, logits.to(kMirror), std::vector<int64_t>{4, 0, 2}),
                       cross_entropy(m, logits, std::vector<int64_t>{4, 0, 2})) == "");
  // A GCN layer's cached propagation matrix follows its model to the device.
  GCNConvOptions o;
  o.cached = true;
  GCNConv conv(6, 3, o);
  conv.initialize(3);
  const data::Batch g = graph();
  const Tensor features = csr_to_dense(*g.sparse.at("x"));
  const Tensor on_cpu = conv.forward(features, g.sparse.at("adj"));  // the cache is made on the CPU
  conv.to(kMirror);
  const data::Batch gd = on_device(g, kMirror);
  const Tensor on_dev = conv.forward(csr_to_dense(*gd.sparse.at("x")), gd.sparse.at("adj"));
  CHECK(on_dev.device() == kMirror);
  CHECK(bit_difference(on_dev, on_cpu) == "");
}

TEST_CASE("gradient norm and non-finite checks run on the device", "[device][optim]") {
  test::MirrorBackend& mirror = test::install_mirror();
  const std::vector<float> g1 = {3.0f, -4.0f, 0.5f, 1e-3f}, g2 = {12.0f, -0.25f};
  auto params = [&](Device d) {
    NamedTensors p = {{"a", Tensor::zeros({2, 2}, d).set_requires_grad(true)},
                      {"b", Tensor::zeros({2}, d).set_requires_grad(true)}};
    p[0].second.backward(Tensor::from_vector({2, 2}, g1, d));
    p[1].second.backward(Tensor::from_vector({2}, g2, d));
    return p;
  };
  double want = 0;  // the reference: binary64 squares summed in parameter, then element order
  for (float x : g1) want += static_cast<double>(x) * x;
  for (float x : g2) want += static_cast<double>(x) * x;
  NamedTensors cpu = params(Device::Cpu), dev = params(kMirror);
  mirror.reset_calls();
  const double norm = clip_grad_norm(dev, 1.0);
  CHECK(mirror.calls(Op::download) == 0);  // one double comes back, no gradient
  CHECK(mirror.calls(Op::sum_squares) == 2);
  CHECK(norm == std::sqrt(want));
  CHECK(clip_grad_norm(cpu, 1.0) == norm);
  for (size_t i = 0; i < cpu.size(); ++i)
    CHECK(bit_difference(dev[i].second.grad(), cpu[i].second.grad()) == "");

  std::vector<float> v = {1.0f, 2.0f, 3.0f};
  CHECK_FALSE(models::has_nonfinite(Tensor::from_vector({3}, v, kMirror)));
  v[1] = std::nanf("");
  mirror.reset_calls();
  CHECK(models::has_nonfinite(Tensor::from_vector({3}, v, kMirror).narrow(0, 1, 2)));
  CHECK(mirror.calls(Op::download) == 0);
  v[1] = -std::numeric_limits<float>::infinity();
  CHECK(models::has_nonfinite(Tensor::from_vector({3}, v, kMirror)));
  CHECK_FALSE(models::has_nonfinite(Tensor::from_vector({3}, v, kMirror).narrow(0, 2, 1)));
}

namespace {

std::string device_recipe(const std::string& root, const std::string& device) {
  return R"(
model: {type: mlp, hidden: [16], dropout: 0.2}
data:
  type: mnist
  root: )" +
         root + R"(
  train_source: t10k
  train_range: [0, 96]
  test_range: [96, 128]
  val_size: 16
  batch_size: 16
  workers: 1
optimizer: {type: adam, lr: 0.003, clip_grad_norm: 1.0}
numerics:
  default: {format: 'e6m6:sr', acc: fp32}
faults:
  - {site: activations, module: fc0, bits: [5], step: 3, kind: flip}
checkpoint: {every_steps: 4, every_epochs: 0, keep: 0}
epochs: 2
seed: 11
device: )" +
         device +
         R"(
logging: {every_steps: 0, progress: off}
)";
}

train::TrainSummary run_recipe(const std::string& text, const std::string& out, std::ostringstream& log,
                               const std::string& resume = "",
                               std::function<void(const train::TrainPosition&)> hook = nullptr) {
  train::TrainOptions o;
  o.out_dir = out;
  o.resume = resume;
  o.log = &log;
  o.after_step = std::move(hook);
  return train::train_recipe(train::parse_recipe(text, "device.yaml", {}, "device"), o);
}

void require_same_checkpoint(const std::string& a, const std::string& b) {
  const std::map<std::string, Tensor> ta = train::read_safetensors(a).tensors,
                                      tb = train::read_safetensors(b).tensors;
  REQUIRE(ta.size() == tb.size());
  for (const auto& [name, t] : ta) {
    INFO(name);
    REQUIRE(tb.count(name));
    CHECK(bit_difference(tb.at(name), t) == "");
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Interrupt {};

}  // namespace

TEST_CASE("the trainer runs on a device, and its checkpoints resume on the CPU", "[device][trainer]") {
  test::install_mirror();  // the provider "cuda-host" of this test program
  test::TempDir dir;
  test::write_mnist_idx(dir.str() + "/mnist", 128);
  const std::string mnist = dir.str() + "/mnist", cpu = dir.str() + "/cpu", dev = dir.str() + "/dev",
                    mixed = dir.str() + "/mixed";
  std::ostringstream cpu_log, dev_log, mixed_log;
  const train::TrainSummary a = run_recipe(device_recipe(mnist, "cpu"), cpu, cpu_log);
  const train::TrainSummary b = run_recipe(device_recipe(mnist, "cuda-host"), dev, dev_log);
  CHECK_THAT(cpu_log.str(), Contains("device: cpu"));
  CHECK_THAT(dev_log.str(), Contains("device: cuda-host: the mirror test backend"));
  REQUIRE(b.steps == a.steps);
  require_same_checkpoint(cpu + "/final.safetensors", dev + "/final.safetensors");
  // The fault fired on the device's activations as on the CPU's (element, bits, values).
  const std::string events = slurp(cpu + "/fault_events.csv");
  CHECK(std::count(events.begin(), events.end(), '\n') == 2);  // the header and one event
  CHECK(slurp(dev + "/fault_events.csv") == events);
  for (const auto& [split, r] : a.final_results) {
    INFO(split);
    CHECK(test::bits(static_cast<float>(b.final_results.at(split).loss)) ==
          test::bits(static_cast<float>(r.loss)));
    CHECK(b.final_results.at(split).accuracy == r.accuracy);
  }

  // Interrupted on the device after step 6; its step-4 checkpoint resumes on the CPU.
  CHECK_THROWS_AS(run_recipe(device_recipe(mnist, "cuda-host"), mixed, mixed_log, "",
                             [](const train::TrainPosition& p) {
                               if (p.step == 6) throw Interrupt{};
                             }),
                  Interrupt);
  run_recipe(device_recipe(mnist, "cpu"), mixed, mixed_log, mixed + "/checkpoints/step-00000004.safetensors");
  require_same_checkpoint(cpu + "/final.safetensors", mixed + "/final.safetensors");

  // `emutrain eval` on the device reads the CPU run's checkpoint.
  const train::SplitResult e =
      train::evaluate_checkpoint(train::parse_recipe(device_recipe(mnist, "cuda-host"), "device.yaml"), cpu);
  CHECK(e.accuracy == a.final_results.at("test").accuracy);
  CHECK(e.loss == a.final_results.at("test").loss);
}

TEST_CASE("a device that cannot run here is a recipe error naming the key", "[device][trainer]") {
  test::install_mirror();
  test::TempDir dir;
  std::ostringstream log;
  // This program registers no provider "cuda": the error names the key and the names it knows.
  try {
    run_recipe(device_recipe(dir.str() + "/none", "cuda"), dir.str() + "/run", log);
    FAIL("no error");
  } catch (const config::RecipeError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::StartsWith("device: cuda: "));
    CHECK_THAT(what, Contains("cuda-host"));
    CHECK(what.find('\n') == std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(dir.str() + "/run"));
}
