// `emutrain bench train RECIPE`: training throughput of a recipe on a device
// under several numerics policies in one run, as samples per second and as a
// ratio to the first policy (fp32 pass-through by default) measured in the
// same process, with the per-op profile of each policy (tools/op_profile.h).
//
//   emutrain bench train recipes/resnet18_cifar10.yaml --device cuda --steps 20
//   emutrain bench train recipes/gcn_cora.yaml --set data.root=../shared/data/cora --policy fp32,e6m6/fp32
//
// Each policy trains `--warmup` steps (not timed: caches, allocator, first
// launches), then `--steps` timed steps through the trainer itself
// (train/trainer.h: data loading, upload, forward, loss, backward, update), and
// stops there: the recipe keeps its own length (so its schedule stays valid), and
// timed steps that cross an epoch's end include that epoch's evaluation. A policy is `FORMAT` (every role in
// that format) or `MUL/ACC` (`e6m6/fp32`: e6m6 everywhere but a binary32
// accumulator; `split:fp32b/fp32`: a multiplier that is no storage format sets
// only mul); it replaces numerics.default of the recipe.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/register.h"
#include "core/backend.h"
#include "core/device_select.h"
#include "tools/bench_machine.h"
#include "tools/commands.h"
#include "tools/op_profile.h"
#include "train/recipe.h"
#include "train/trainer.h"

namespace emu::cli {
namespace {

struct BenchTrainOptions {
  std::string recipe;
  std::string device = "cpu";
  int64_t steps = 10, warmup = 2;
  std::vector<std::string> policies = {"fp32", "e6m6/fp32", "bf16", "posit16_1"};
  std::vector<std::string> sets;
  bool profile = true;
  int top = 12;  // ops per profile
};

struct Stop {};  // thrown by the step hook after the last timed step

// "e6m6/fp32" -> "{format: e6m6, acc: fp32}"; "bf16" -> "{format: bf16}". A
// multiplier that is no storage format (split:..., lut:...) sets mul alone:
// "split:fp32b/fp32" -> "{mul: split:fp32b, acc: fp32}".
std::string policy_map(const std::string& policy) {
  const size_t slash = policy.find('/');
  const std::string first = policy.substr(0, slash);
  const bool mul_only = first.rfind("split:", 0) == 0 || first.rfind("lut:", 0) == 0;
  const std::string head = (mul_only ? "{mul: '" : "{format: '") + first + "'";
  if (slash == std::string::npos) return head + "}";
  return head + ", acc: '" + policy.substr(slash + 1) + "'}";
}

struct Result {
  std::string policy;
  double seconds = 0;  // the timed steps
  int64_t samples = 0;
  std::vector<std::pair<Op, OpProfiler::Entry>> ops;  // by time, descending
};

// The profiler in front of the device's backend while it lives.
class ProfiledDevice {
 public:
  explicit ProfiledDevice(const std::string& device) : device_(device) {
    if (device == "cpu") {
      profiler_ = std::make_unique<OpProfiler>(default_cpu_backend(), [] {});
      register_backend(Device::Cpu, profiler_.get());
      return;
    }
    activate_device(device);  // the real backend (throws a one-line reason when there is none)
    profiler_ =
        std::make_unique<OpProfiler>(backend_for(Device::Cuda), [device] { synchronize_device(device); });
    OpProfiler* p = profiler_.get();
    real_ = &backend_for(Device::Cuda);
    register_device_provider({device, device_description(device), [p]() -> Backend& { return *p; }});
  }
  ~ProfiledDevice() {
    if (device_ == "cpu")
      register_backend(Device::Cpu, &default_cpu_backend());
    else
      register_backend(Device::Cuda, real_);
  }
  OpProfiler& profiler() { return *profiler_; }

 private:
  std::string device_;
  std::unique_ptr<OpProfiler> profiler_;
  Backend* real_ = nullptr;
};

Result run_policy(const BenchTrainOptions& o, const std::string& policy, OpProfiler* profiler,
                  const std::string& out_dir) {
  std::vector<std::string> sets = o.sets;
  for (const std::string& s :
       {"numerics.default=" + policy_map(policy), std::string("checkpoint.every_steps=0"),
        std::string("checkpoint.every_epochs=0"), std::string("logging.every_steps=0"),
        std::string("logging.progress=off"), "device=" + o.device})
    sets.push_back(s);
  const train::Recipe recipe = train::load_recipe(o.recipe, sets);
  const int64_t batch = recipe.root["data"]["batch_size"].as<int64_t>();

  using Clock = std::chrono::steady_clock;
  Clock::time_point start;
  Result r;
  r.policy = policy;
  std::ostringstream log;
  train::TrainOptions t;
  t.out_dir = out_dir;
  t.log = &log;
  t.after_step = [&](const train::TrainPosition& pos) {
    if (pos.step == o.warmup) {
      synchronize_device(o.device);
      start = Clock::now();
      if (profiler) profiler->reset();
    }
    if (pos.step == o.warmup + o.steps) {
      synchronize_device(o.device);
      r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      throw Stop{};
    }
  };
  try {
    train::train_recipe(recipe, t);
    throw std::runtime_error("bench train: the recipe ended before " + std::to_string(o.warmup + o.steps) +
                             " steps (policy " + policy +
                             "): give fewer --steps or --warmup, or --set epochs=N");
  } catch (const Stop&) {
  }
  r.samples = batch * o.steps;  // the last batch of an epoch may be shorter: recipes here drop nothing
  if (profiler)
    for (int i = 0; i < kOpCount; ++i) {
      const OpProfiler::Entry& e = profiler->entry(static_cast<Op>(i));
      if (e.calls) r.ops.emplace_back(static_cast<Op>(i), e);
    }
  std::sort(r.ops.begin(), r.ops.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  return r;
}

}  // namespace

int run_bench_train(const BenchTrainOptions& o, std::ostream& out) {
  if (o.steps < 1 || o.warmup < 1)
    throw std::invalid_argument("bench train: --steps and --warmup must be >= 1");
  if (o.policies.empty()) throw std::invalid_argument("bench train: --policy: give at least one policy");
  const std::filesystem::path out_dir =
      std::filesystem::temp_directory_path() / fmt::format("emutrain-bench-train-{}", ::getpid());
  out << fmt::format("bench train {} on {}: {} warm-up + {} timed steps per policy\n", o.recipe,
                     device_description(o.device), o.warmup, o.steps);
  out << fmt::format("machine: {}, load average {}\n", cpu_model(), load_average());
  std::vector<Result> results;
  {
    std::unique_ptr<ProfiledDevice> profiled =
        o.profile ? std::make_unique<ProfiledDevice>(o.device) : nullptr;
    for (const std::string& policy : o.policies) {
      out << fmt::format("  {} ...", policy) << std::flush;
      results.push_back(run_policy(o, policy, profiled ? &profiled->profiler() : nullptr,
                                   (out_dir / std::to_string(results.size())).string()));
      out << fmt::format(" {:.3f} s\n", results.back().seconds);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(out_dir, ec);

  const Result& base = results.front();
  out << fmt::format("\n{:<28} {:>12} {:>12} {:>14}\n", "policy (format[/acc])", "samples/s", "step ms",
                     "vs " + base.policy);
  for (const Result& r : results)
    out << fmt::format("{:<28} {:>12.1f} {:>12.3f} {:>13.2f}x\n", r.policy, r.samples / r.seconds,
                       1e3 * r.seconds / o.steps, r.seconds / base.seconds);
  if (o.profile) {
    out << fmt::format(
        "\nPer-op profile of the timed steps (the device is synchronised around every op, so the\n"
        "sum can exceed the step time by the launch latencies; top {} ops per policy):\n",
        o.top);
    for (const Result& r : results) {
      double total = 0;
      for (const auto& [op, e] : r.ops) total += e.seconds;
      out << fmt::format("\n{}: {:.3f} s in ops ({:.0f}% of the timed steps)\n", r.policy, total,
                         100 * total / r.seconds);
      out << fmt::format("  {:<32} {:>8} {:>12} {:>8}\n", "op", "calls", "ms/step", "share");
      for (size_t i = 0; i < r.ops.size() && static_cast<int>(i) < o.top; ++i) {
        const auto& [op, e] = r.ops[i];
        out << fmt::format("  {:<32} {:>8} {:>12.3f} {:>7.1f}%\n", op_name(op), e.calls,
                           1e3 * e.seconds / o.steps, total > 0 ? 100 * e.seconds / total : 0.0);
      }
    }
  }
  return 0;
}

Runner add_bench_train(CLI::App& bench_group) {
  CLI::App* cmd = bench_group.add_subcommand(
      "train", "samples/s of a recipe's training steps under several policies, with the per-op profile");
  auto o = std::make_shared<BenchTrainOptions>();
  cmd->add_option("recipe", o->recipe, "Recipe YAML file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--device", o->device, "cpu, cuda or cuda-host")->capture_default_str();
  cmd->add_option("--steps", o->steps, "Timed optimizer steps per policy")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed steps before them")->capture_default_str();
  cmd->add_option("--policy", o->policies, "FORMAT or MUL/ACC, comma-separated; the first is the baseline")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--set", o->sets, "key=value applied to the recipe (as in emutrain train), repeatable");
  cmd->add_flag("!--no-profile", o->profile, "Skip the per-op profile (no synchronisation around ops)");
  cmd->add_option("--top", o->top, "Ops shown per profile")->capture_default_str();
  return [o]() { return run_bench_train(*o, std::cout); };
}

EMU_BENCH_COMMAND("train", add_bench_train);

}  // namespace emu::cli
