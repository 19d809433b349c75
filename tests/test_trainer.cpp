// The recipe-driven trainer, in process: a short run learns and writes its run
// directory; an interrupted run resumed from its mid-epoch checkpoint ends with
// the same bits as an uninterrupted one (stochastic rounding, dropout, Adam,
// shuffling and augmentation included); a NaN loss stops the run naming where
// it appeared; ResNet-18 takes a few steps on CIFAR-10 files in the canonical
// binary format.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "data/registry.h"
#include "models/registry.h"
#include "test_trainer_data.h"
#include "train/json.h"
#include "train/trainer.h"

using namespace emu;
using namespace emu::train;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

std::string mlp_recipe(const std::string& root) {
  return R"(
model: {type: mlp, hidden: [32]}
data:
  type: mnist
  root: )" +
         root + R"(
  train_source: t10k
  train_range: [0, 200]
  test_range: [200, 264]
  batch_size: 16
  workers: 1
optimizer: {type: sgd, lr: 0.05, momentum: 0.9}
epochs: 3
seed: 5
logging: {every_steps: 0, progress: off}
)";
}

TrainSummary run(const std::string& text, const std::string& out, const std::vector<std::string>& sets = {},
                 const std::string& resume = "", std::function<void(const TrainPosition&)> hook = nullptr) {
  Recipe r = parse_recipe(text, "test.yaml", sets, "test");
  TrainOptions o;
  o.out_dir = out;
  o.resume = resume;
  std::ostringstream log;
  o.log = &log;
  o.after_step = std::move(hook);
  return train_recipe(r, o);
}

// The tensors of a checkpoint, by name.
std::map<std::string, Tensor> tensors_of(const std::string& path) { return read_safetensors(path).tensors; }

void check_same_bits(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [name, t] : a) {
    INFO(name);
    REQUIRE(b.count(name));
    const Tensor& u = b.at(name);
    REQUIRE(t.shape() == u.shape());
    CHECK(std::memcmp(t.data(), u.data(), static_cast<size_t>(t.numel()) * sizeof(float)) == 0);
  }
}

// A metrics line without its timing fields (which are not bit-exact).
std::string without_timing(const std::string& line) {
  Json j = parse_json(line);
  std::string out;
  for (const auto& [k, v] : j.members)
    if (k != "time_s" && k != "samples_per_s") out += k + "=" + v.text + ";";
  return out;
}

struct Interrupt {};

}  // namespace

TEST_CASE("a short run learns and writes its run directory", "[trainer]") {
  test::TempDir dir;
  test::write_mnist_idx(dir.str() + "/mnist", 264);
  const std::string out = dir.str() + "/run";
  TrainSummary s = run(mlp_recipe(dir.str() + "/mnist"), out, {"checkpoint.keep=2"});
  CHECK(s.steps == 3 * 13);  // 200 examples in batches of 16: 13 per epoch, the last short
  CHECK(s.epochs == 3);
  REQUIRE(s.final_results.count("test"));
  CHECK(s.final_results.at("test").counted == 64);
  CHECK(s.final_results.at("test").accuracy >= 0.9);
  CHECK_FALSE(s.final_results.count("val"));  // no val_size: no val split

  // recipe.yaml is the resolved recipe and parses back to it.
  Recipe back = load_recipe(out + "/recipe.yaml");
  CHECK(back.root["checkpoint"]["keep"].Scalar() == "2");
  CHECK(back.root["optimizer"]["nesterov"].Scalar() == "false");
  std::vector<std::string> jsonl = lines_of(out + "/metrics.jsonl"), csv = lines_of(out + "/metrics.csv");
  REQUIRE(jsonl.size() == 3);
  REQUIRE(csv.size() == 4);
  CHECK(csv[0] ==
        "epoch,step,train_loss,train_acc,val_loss,val_acc,test_loss,test_acc,lr,time_s,samples_per_s");
  Json last = parse_json(jsonl.back());
  CHECK(last.find("epoch")->text == "3");
  CHECK(last.find("step")->text == "39");
  CHECK(std::stod(last.find("test_acc")->text) == s.final_results.at("test").accuracy);
  CHECK(std::stod(last.find("train_loss")->text) <
        std::stod(parse_json(jsonl.front()).find("train_loss")->text));
  CHECK(fs::exists(out + "/summary.json"));
  CHECK(fs::exists(out + "/log.txt"));
  CHECK(fs::exists(out + "/final.safetensors"));
  int periodic = 0;
  for (const auto& e : fs::directory_iterator(out + "/checkpoints"))
    periodic += e.path().extension() == ".safetensors";
  CHECK(periodic == 2);  // one per epoch, the oldest pruned
  CHECK(fs::exists(out + "/checkpoints/step-00000039.safetensors"));

  // `emutrain eval` on the final checkpoint gives the last epoch's test figures.
  SplitResult e = evaluate_checkpoint(back, out);
  CHECK(e.counted == 64);
  CHECK(e.accuracy == s.final_results.at("test").accuracy);
  CHECK(e.loss == s.final_results.at("test").loss);
}

TEST_CASE("a run resumed from a mid-epoch checkpoint ends bit-identical to an uninterrupted one",
          "[trainer]") {
  test::TempDir dir;
  test::write_mnist_idx(dir.str() + "/mnist", 264);
  // Emulated numerics with stochastic rounding, dropout, Adam, a warm-up
  // schedule, shuffling, augmentation and a validation split: every draw the
  // resumed run makes must be the one the uninterrupted run made.
  const std::vector<std::string> sets = {"model.dropout=0.2",
                                         "optimizer={type: adam, lr: 0.003}",
                                         "schedule={type: warmup_cosine, warmup_steps: 5}",
                                         "numerics.default={format: 'e6m6:sr', acc: fp32}",
                                         "data.augment={crop_padding: 2}",
                                         "data.val_size=24",
                                         "checkpoint={every_steps: 4, every_epochs: 0, keep: 0}",
                                         "data.workers=2",
                                         "data.train_range=[0, 120]",
                                         "model.hidden=[16]"};
  const std::string text = mlp_recipe(dir.str() + "/mnist");
  const std::string a = dir.str() + "/a", b = dir.str() + "/b";
  TrainSummary full = run(text, a, sets);
  REQUIRE(full.steps == 3 * 6);  // 96 training examples after val_size: 6 batches of 16

  // Interrupted after step 11: the newest checkpoint is step 8, epoch 2 batch 2.
  CHECK_THROWS_AS(run(text, b, sets, "",
                      [](const TrainPosition& p) {
                        if (p.step == 11) throw Interrupt{};
                      }),
                  Interrupt);
  CHECK(fs::exists(b + "/checkpoints/step-00000008.safetensors"));
  CHECK_FALSE(fs::exists(b + "/final.safetensors"));
  CheckpointState mid = read_checkpoint_state(resolve_checkpoint(b));
  CHECK(mid.position.step == 8);
  CHECK(mid.position.epoch == 1);
  CHECK(mid.position.batch == 2);

  TrainSummary resumed = run(text, b, sets, b);
  CHECK(resumed.steps == full.steps);
  check_same_bits(tensors_of(a + "/final.safetensors"), tensors_of(b + "/final.safetensors"));
  // The per-epoch metrics (losses, accuracies, lr) match too, the resumed epoch included.
  std::vector<std::string> ma = lines_of(a + "/metrics.jsonl"), mb = lines_of(b + "/metrics.jsonl");
  REQUIRE(ma.size() == 3);
  REQUIRE(mb.size() == 3);
  for (size_t i = 0; i < ma.size(); ++i) CHECK(without_timing(ma[i]) == without_timing(mb[i]));

  // The resumed run really had work left: the checkpoint it started from is not the end.
  auto start = tensors_of(b + "/checkpoints/step-00000008.safetensors");
  const Tensor& w8 = start.at("model.fc0.weight");
  CHECK(std::memcmp(w8.data(), tensors_of(a + "/final.safetensors").at("model.fc0.weight").data(),
                    static_cast<size_t>(w8.numel()) * 4) != 0);
}

TEST_CASE("a loss that becomes NaN/Inf stops the run and says where", "[trainer]") {
  test::TempDir dir;
  test::write_mnist_idx(dir.str() + "/mnist", 264);
  const std::string text = mlp_recipe(dir.str() + "/mnist");
  // Inputs scaled to ~100 and fc0's output stored in e2m1 (largest finite 3):
  // its output overflows to infinity in the very first forward pass.
  try {
    run(text, dir.str() + "/r1",
        {"data.mean=[0]", "data.std=[0.01]", "numerics.overrides=[{match: fc0, out: e2m1}]"});
    FAIL("no error");
  } catch (const NonFiniteLoss& e) {
    std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos);
    CHECK_THAT(m, Catch::StartsWith("loss became NaN at step 1 (epoch 1, batch 1)"));
    CHECK_THAT(m, Catch::Contains("module 'fc0'"));
  }
  // A learning rate of 1e38 sends fc0.weight to infinity in the first update.
  try {
    run(text, dir.str() + "/r2", {"data.mean=[0]", "data.std=[0.01]", "optimizer.lr=1e38"});
    FAIL("no error");
  } catch (const NonFiniteLoss& e) {
    std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("at step 2 (epoch 1, batch 2)"));
    CHECK_THAT(m, Catch::Contains("parameter 'fc0.weight' is non-finite"));
  }
}

TEST_CASE("ResNet-18 takes a few steps on CIFAR-10 binary files", "[trainer][resnet]") {
  test::TempDir dir;
  test::write_cifar10_bin(dir.str(), 2, 2);
  const std::string out = dir.str() + "/run";
  const std::string text = R"(
model: {type: resnet18}
data: {type: cifar10, root: )" +
                           dir.str() + R"(, batch_size: 2, augment: {crop_padding: 4, hflip: true}}
optimizer: {type: sgd, lr: 0.05, momentum: 0.9, weight_decay: 0.0005}
steps: 2
seed: 3
checkpoint: {every_epochs: 0}
logging: {progress: off}
)";
  TrainSummary s = run(text, out);
  CHECK(s.steps == 2);
  REQUIRE(s.final_results.count("train"));
  CHECK(std::isfinite(s.final_results.at("train").loss));
  CHECK(std::isfinite(s.final_results.at("test").loss));

  // The reference architecture's size: 11,173,962 parameters for 10 classes.
  Recipe r = parse_recipe(text, "t.yaml");
  auto fresh =
      models::make_model(r.root["model"], {{"classes", 10}, {"channels", 3}, {"height", 32}, {"width", 32}});
  int64_t params = 0;
  for (const auto& [_, p] : fresh->named_parameters()) params += p.numel();
  CHECK(params == 11173962);
  fresh->initialize(3);
  auto trained = tensors_of(out + "/final.safetensors");
  for (const char* name : {"conv1.weight", "layer1.0.conv1.weight", "layer4.1.conv2.weight", "fc.weight",
                           "fc.bias", "layer2.0.downsample.0.weight", "bn1.running_mean"}) {
    INFO(name);
    Tensor init = fresh->state_dict().at(name);
    const Tensor& now = trained.at(std::string("model.") + name);
    REQUIRE(now.shape() == init.shape());
    CHECK(std::memcmp(now.data(), init.data(), static_cast<size_t>(init.numel()) * 4) != 0);
    std::vector<float> v = now.to_vector();
    CHECK(std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); }));
  }
  CHECK(trained.at("model.bn1.num_batches_tracked").item() == 2);
}
