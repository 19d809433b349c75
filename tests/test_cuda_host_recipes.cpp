// The five recipes train on the CUDA backend with the CPU's bits (issue 16).
//
// Each shipped recipe file (LeNet-5, ResNet-18, the FordA Transformer, the CRNN
// with LSTM cells, with GRU cells and its pwl:3 variant, the GCN and its 2:4
// variant) runs three optimizer steps through the trainer in a reduced
// configuration (`--set` widths, batch, sequence length; small files in the
// datasets' canonical formats), once with
// `device: cpu` and once with `device: cuda-host` (the CUDA kernels executed on
// the CPU by the host executor, docs/host_executor.md), under three policies:
// fp32, e6m6 with binary32 accumulation, and one with stochastic rounding. The
// loss of every step and every tensor of every step's checkpoint (weights,
// buffers, optimizer state) must have the same bits; so must the final
// evaluation. A checkpoint written on one backend resumes on the other and
// ends on the uninterrupted run's bits. The GCN's dense-feature path, which no
// dataset feeds, is compared at the model level.
//
// The CPU backend is the independent reference: it shares no kernel code with
// backends/cuda/ops, only the numerics definitions both call.
#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda/register.h"
#include "core/csr.h"
#include "core/device_select.h"
#include "optim/adam.h"
#include "tests/pinned_cases.h"
#include "tests/sanitized.h"
#include "tests/test_models_util.h"
#include "tests/test_recipe_data.h"
#include "tests/test_trainer_data.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/recipe.h"
#include "train/safetensors.h"
#include "train/trainer.h"

using namespace emu;

namespace {

constexpr int kSteps = 3;

// The datasets of every recipe, written once per test program.
const std::string& data_root() {
  static test::TempDir dir;
  static const std::string root = [] {
    const std::string d = dir.str();
    test::write_mnist_idx(d + "/mnist", 24);
    test::write_cifar10_bin(d + "/cifar", 4, 4);
    test::write_ucr(d + "/ucr/FordA_TRAIN.tsv", 16, 16, 1);
    test::write_ucr(d + "/ucr/FordA_TEST.tsv", 8, 16, 2);
    test::write_cora(d + "/cora", 40);
    test::write_fra_pairs(d + "/fra", 40);
    return d;
  }();
  return root;
}

struct RecipeCase {
  std::string file;               // in recipes/
  std::vector<std::string> sets;  // the reduced configuration
};

const std::map<std::string, RecipeCase>& recipe_cases() {
  static const std::map<std::string, RecipeCase> cases = [] {
    const std::string d = data_root();
    const std::vector<std::string> crnn = {
        "data.root=" + d + "/fra", "data.max_pairs=40",     "data.batch_size=4", "data.workers=0",
        "model.embed_dim=8",       "model.conv_channels=8", "model.hidden=8"};
    const std::vector<std::string> gcn = {"data.root=" + d + "/cora", "data.train_per_class=4",
                                          "data.val_size=8", "data.test_size=8", "model.hidden=8"};
    std::map<std::string, RecipeCase> c;
    c["lenet5"] = {"lenet5_mnist.yaml",
                   {"data.root=" + d + "/mnist", "data.train_range=[0, 16]", "data.test_range=[16, 24]",
                    "data.batch_size=4", "data.eval_batch_size=8", "data.workers=0"}};
    // Half the width in a sanitizer build (tests/sanitized.h): the same layers, a quarter of the MACs.
    const std::string resnet_width = test::kSanitized ? "model.width=2" : "model.width=4";
    c["resnet18"] = {"resnet18_cifar10.yaml",
                     {"data.root=" + d + "/cifar", resnet_width, "data.train_range=[0, 8]",
                      "data.test_range=[0, 4]", "data.batch_size=2", "data.eval_batch_size=4",
                      "data.workers=0", "schedule.warmup_epochs=0", "schedule.warmup_steps=1"}};
    c["transformer"] = {
        "transformer_forda.yaml",
        {"data.root=" + d + "/ucr", "data.val_size=4", "data.batch_size=4", "model.num_blocks=1",
         "model.head_size=4", "model.num_heads=2", "model.mlp_units=[8]"}};
    c["crnn"] = {"crnn_fra_eng.yaml", crnn};
    c["crnn-pwl3"] = {"crnn_fra_eng_pwl3.yaml", crnn};
    std::vector<std::string> gru = crnn;
    gru.push_back("model.rnn=gru");
    c["crnn-gru"] = {"crnn_fra_eng.yaml", gru};
    c["gcn"] = {"gcn_cora.yaml", gcn};
    c["gcn-2:4"] = {"gcn_cora_sparse24.yaml", gcn};
    return c;
  }();
  return cases;
}

// The three policies, as changes of numerics.default (a recipe's other
// numerics keys, such as pwl functions or 2:4 sparsity, stay).
const std::vector<std::pair<std::string, std::vector<std::string>>>& policies() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> p = {
      {"fp32", {"numerics.default.format=fp32"}},
      {"e6m6/fp32", {"numerics.default.format=e6m6", "numerics.default.acc=fp32"}},
      {"bf16 e5m2:sr grads",
       {"numerics.default.format=bf16", "numerics.default.acc=fp32", "numerics.default.grads='e5m2:sr'"}},
  };
  return p;
}

struct Run {
  std::string dir;
  std::vector<float> losses;  // step 1, 2, ... of this run
  train::TrainSummary summary;
};

Run train_on(const std::string& device, const RecipeCase& rc, const std::vector<std::string>& policy,
             const std::string& dir, const std::string& resume = "") {
  std::vector<std::string> sets = rc.sets;
  sets.insert(sets.end(), policy.begin(), policy.end());
  for (const char* s : {"checkpoint.every_steps=1", "checkpoint.every_epochs=0", "checkpoint.keep=0",
                        "logging.every_steps=0", "logging.progress=off"})
    sets.emplace_back(s);
  sets.push_back("steps=" + std::to_string(kSteps));
  sets.push_back("device=" + device);
  Run run;
  run.dir = dir;
  std::ostringstream log;
  train::TrainOptions o;
  o.out_dir = dir;
  o.resume = resume;
  o.log = &log;
  o.step_loss = [&run](int64_t, float loss) { run.losses.push_back(loss); };
  const train::Recipe r = train::load_recipe(std::string(EMUTRAIN_SOURCE_DIR) + "/recipes/" + rc.file, sets);
  run.summary = train::train_recipe(r, o);
  INFO(log.str());
  REQUIRE(run.summary.steps == kSteps);
  return run;
}

std::string checkpoint_of(const std::string& dir, int step) {
  char name[64];
  std::snprintf(name, sizeof name, "/checkpoints/step-%08d.safetensors", step);
  return dir + name;
}

// Every tensor of both checkpoints has the same shape and bits.
void require_same_tensors(const std::string& a, const std::string& b) {
  INFO(a << " vs " << b);
  const std::map<std::string, Tensor> ta = train::read_safetensors(a).tensors,
                                      tb = train::read_safetensors(b).tensors;
  REQUIRE(ta.size() == tb.size());
  REQUIRE(ta.size() > 2);
  for (const auto& [name, t] : ta) {
    INFO(name);
    REQUIRE(tb.count(name));
    const std::vector<float> va = t.to_vector(), vb = tb.at(name).to_vector();
    REQUIRE(t.shape() == tb.at(name).shape());
    CHECK(test::mismatch(vb, va) == "");
  }
}

void require_same_results(const train::TrainSummary& a, const train::TrainSummary& b) {
  REQUIRE(a.final_results.size() == b.final_results.size());
  for (const auto& [split, r] : a.final_results) {
    INFO(split);
    CHECK(test::bits(static_cast<float>(b.final_results.at(split).loss)) ==
          test::bits(static_cast<float>(r.loss)));
    CHECK(b.final_results.at(split).accuracy == r.accuracy);
  }
}

// The recipe `name` under each policy on both backends, step by step; then a
// resume across backends under the stochastic-rounding policy. A sanitizer
// build (tests/sanitized.h) leaves out the middle policy, e6m6/fp32: its
// kernels' memory is that of the other two (the same shapes and buffers), and
// every kernel runs under every validate policy in validate_cuda_host_*.
// `only` (an index of policies()) runs one policy: ResNet-18, the slowest
// recipe, is one ctest per policy.
void check_recipe(const std::string& name, int only = -1) {
  register_cuda_devices();
  const RecipeCase& rc = recipe_cases().at(name);
  test::TempDir dir;
  for (const auto& [policy_name, policy] : policies()) {
    if (only >= 0 && &policy != &policies()[static_cast<size_t>(only)].second) continue;
    if (test::kSanitized && &policy == &policies()[1].second) continue;
    INFO(name << " under " << policy_name);
    const std::string tag = std::to_string(&policy - &policies()[0].second);
    const Run cpu = train_on("cpu", rc, policy, dir.str() + "/cpu" + tag);
    const Run dev = train_on("cuda-host", rc, policy, dir.str() + "/dev" + tag);
    REQUIRE(cpu.losses.size() == static_cast<size_t>(kSteps));
    CHECK(test::mismatch(dev.losses, cpu.losses) == "");
    for (int step = 1; step <= kSteps; ++step) {
      INFO("after step " << step);
      require_same_tensors(checkpoint_of(cpu.dir, step), checkpoint_of(dev.dir, step));
    }
    require_same_results(cpu.summary, dev.summary);

    if (&policy == &policies().back().second) {
      // The CPU's step-1 checkpoint resumed on the device, the device's step-2 checkpoint on the CPU.
      const Run a = train_on("cuda-host", rc, policy, dir.str() + "/resume_dev", checkpoint_of(cpu.dir, 1));
      const Run b = train_on("cpu", rc, policy, dir.str() + "/resume_cpu", checkpoint_of(dev.dir, 2));
      CHECK(test::mismatch(a.losses, std::vector<float>(cpu.losses.begin() + 1, cpu.losses.end())) == "");
      CHECK(test::mismatch(b.losses, std::vector<float>(cpu.losses.begin() + 2, cpu.losses.end())) == "");
      require_same_tensors(cpu.summary.final_checkpoint, a.summary.final_checkpoint);
      require_same_tensors(cpu.summary.final_checkpoint, b.summary.final_checkpoint);
      require_same_results(cpu.summary, a.summary);
      require_same_results(cpu.summary, b.summary);
    }
  }
}

}  // namespace

TEST_CASE("recipe lenet5_mnist on cuda-host: the CPU's bits every step", "[cuda_host][recipes][lenet5]") {
  check_recipe("lenet5");
}
TEST_CASE("recipe resnet18_cifar10 on cuda-host under fp32: the CPU's bits every step",
          "[cuda_host][recipes][resnet18_fp32]") {
  check_recipe("resnet18", 0);
}
TEST_CASE("recipe resnet18_cifar10 on cuda-host under e6m6/fp32: the CPU's bits every step",
          "[cuda_host][recipes][resnet18_e6m6]") {
  check_recipe("resnet18", 1);
}
TEST_CASE("recipe resnet18_cifar10 on cuda-host under bf16 with e5m2:sr grads: the CPU's bits every step",
          "[cuda_host][recipes][resnet18_sr]") {
  check_recipe("resnet18", 2);
}
TEST_CASE("recipe transformer_forda on cuda-host: the CPU's bits every step",
          "[cuda_host][recipes][transformer]") {
  check_recipe("transformer");
}
TEST_CASE("recipe crnn_fra_eng on cuda-host: the CPU's bits every step", "[cuda_host][recipes][crnn]") {
  check_recipe("crnn");
}
TEST_CASE("recipe crnn_fra_eng_pwl3 on cuda-host: the CPU's bits every step", "[cuda_host][recipes][crnn]") {
  check_recipe("crnn-pwl3");
}
TEST_CASE("recipe crnn_fra_eng with GRU cells on cuda-host: the CPU's bits every step",
          "[cuda_host][recipes][crnn]") {
  check_recipe("crnn-gru");
}
TEST_CASE("recipe gcn_cora on cuda-host: the CPU's bits every step", "[cuda_host][recipes][gcn]") {
  check_recipe("gcn");
}
TEST_CASE("recipe gcn_cora_sparse24 on cuda-host: the CPU's bits every step", "[cuda_host][recipes][gcn]") {
  check_recipe("gcn-2:4");
}

// The GCN with dense input features (a (V, F) tensor instead of Cora's CSR):
// three Adam steps under each policy, every loss and weight compared.
TEST_CASE("gcn with dense features on cuda-host: the CPU's bits every step", "[cuda_host][recipes][gcn]") {
  register_cuda_devices();
  REQUIRE(activate_device("cuda-host") == Device::Cuda);
  data::Batch graph = test::pinned::graph();
  graph.tensors["x"] = csr_to_dense(*graph.sparse.at("x"));
  graph.sparse.erase("x");
  const models::DataMeta meta = {{"features", 6}, {"classes", 3}, {"nodes", 7}};
  const std::vector<std::pair<const char*, NumericsPolicy>> cases = {
      {"fp32", test::policy({{"format", "fp32"}})},
      {"e6m6/fp32", test::policy({{"format", "e6m6"}, {"acc", "fp32"}})},
      {"bf16 e5m2:sr grads", test::policy({{"format", "bf16"}, {"acc", "fp32"}, {"grads", "e5m2:sr"}})}};
  for (const auto& [name, policy] : cases) {
    INFO(name);
    const char* yaml = "{type: gcn, hidden: 8, dropout: 0.5, input_dropout: 0.5}";
    std::shared_ptr<models::Model> cpu = test::model_from_yaml(yaml, meta, 3);
    std::shared_ptr<models::Model> dev = test::model_from_yaml(yaml, meta, 3);
    cpu->apply_numerics(policy);
    dev->apply_numerics(policy);
    dev->to(Device::Cuda);
    AdamOptions o;
    o.lr = 0.01f;
    Adam opt_cpu(cpu->named_parameters(), o), opt_dev(dev->named_parameters(), o);
    cpu->train();
    dev->train();
    data::Batch on_dev = graph;
    for (auto& [key, t] : on_dev.tensors) t = t.to(Device::Cuda);
    for (auto& [key, m] : on_dev.sparse)
      m = std::make_shared<const CsrMatrix>(csr_with_values(*m, m->values.to(Device::Cuda)));
    for (int step = 0; step < kSteps; ++step) {
      INFO("step " << step);
      std::vector<float> losses[2];
      int i = 0;
      for (auto [m, opt, batch] :
           {std::make_tuple(cpu.get(), &opt_cpu, &graph), std::make_tuple(dev.get(), &opt_dev, &on_dev)}) {
        opt->zero_grad();
        Tensor loss = m->loss(m->predict(*batch, "train"));
        loss.backward();
        opt->step();
        m->context().step += 1;
        losses[i++] = loss.to_vector();
      }
      CHECK(test::mismatch(losses[1], losses[0]) == "");
      const auto pc = cpu->named_parameters(), pd = dev->named_parameters();
      REQUIRE(pc.size() == pd.size());
      for (size_t k = 0; k < pc.size(); ++k) {
        INFO(pc[k].first);
        CHECK(test::mismatch(pd[k].second.to_vector(), pc[k].second.to_vector()) == "");
      }
    }
  }
}
