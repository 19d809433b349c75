// `emutrain faults RECIPE --checkpoint CKPT --trials N`: an inference fault
// campaign (docs/faults.md). Loads the checkpoint, evaluates the test split
// fault-free, then for every site (module x tensor: each weight a layer reads,
// each output it writes, and with --sites metadata the block metadata of each
// weight read in a block format) runs N evaluations, each with one random
// single-bit flip in the encoding of the tensor's format (random code, random bit,
// Philox keyed by (seed, site, trial)), and writes faults.csv (mismatch rate =
// fraction of test predictions that changed, mean delta-loss, ...) and a bar
// chart of the mismatch rates.
//
// A weight fault is an upset of the stored weight: it hits the same element and
// bit at every read of the trial (every batch). An activation fault is an upset
// of one output: the first batch's output only.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "config/args.h"
#include "core/autograd.h"
#include "core/draw_key.h"
#include "data/loader.h"
#include "data/registry.h"
#include "layers/layer_io.h"
#include "models/registry.h"
#include "numerics/format_spec.h"
#include "plot/plot.h"
#include "tools/commands.h"
#include "train/atomic_file.h"
#include "train/checkpoint.h"
#include "train/csv.h"
#include "train/faults.h"
#include "train/trainer.h"

namespace emu::cli {
namespace {

namespace fs = std::filesystem;

struct CampaignArgs {
  std::string recipe, checkpoint, out, sites = "weights,activations";
  int64_t trials = 100;
  uint64_t seed = 0;
  std::vector<std::string> sets;
};

// One place a fault can hit: the k-th time per forward that (module, site, name) is hooked.
struct Site {
  std::string module, name;
  TensorSite site = TensorSite::Weights;
  bool meta = false;  // the block metadata of a weight read in a block format
  int occurrence = 0;
  int64_t elements = 0;  // codes of the first batch's tensor (blocks for metadata)
  Format format;
  std::string label() const {
    return fmt::format("{}{}{}{}", module.empty() ? "" : module, module.empty() ? "" : ".", name,
                       occurrence ? fmt::format("#{}", occurrence) : "");
  }
};

const char* site_name(const Site& s) {
  return s.meta                              ? "metadata"
         : s.site == TensorSite::Weights     ? "weights"
         : s.site == TensorSite::Activations ? "activations"
                                             : "gradients";
}

struct EvalResult {
  std::vector<int64_t> predictions;  // argmax per counted target (first maximum); -1 when a logit is NaN
  double loss = 0;                   // mean over counted targets
  double accuracy = 0;
};

// The model in eval mode over the cached test batches; `before_batch` runs before each forward.
EvalResult evaluate_batches(models::Model& model, const std::vector<data::Batch>& batches,
                            const std::function<void(size_t)>& before_batch) {
  NoGradGuard no_grad;
  EvalResult r;
  double loss_sum = 0;
  int64_t counted = 0, correct = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    before_batch(b);
    models::Prediction p = model.predict(batches[b], "test");
    Tensor logits = p.logits.contiguous(), targets = p.targets.contiguous();
    const int64_t rows = logits.dim(0), classes = logits.numel() / std::max<int64_t>(rows, 1);
    int64_t c = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const float t = targets.data()[i];
      if (t < 0) continue;
      const float* row = logits.data() + i * classes;
      int64_t best = 0;
      bool nan = false;
      for (int64_t k = 0; k < classes; ++k) {
        if (std::isnan(row[k])) nan = true;
        if (row[k] > row[best]) best = k;
      }
      r.predictions.push_back(nan ? -1 : best);
      if (!nan && best == static_cast<int64_t>(t)) ++correct;
      ++c;
    }
    if (c > 0) loss_sum += static_cast<double>(model.loss(p).item()) * static_cast<double>(c);
    counted += c;
  }
  r.loss = counted ? loss_sum / static_cast<double>(counted) : std::nan("");
  r.accuracy = counted ? static_cast<double>(correct) / static_cast<double>(counted) : std::nan("");
  return r;
}

uint64_t site_stream(const Site& s) {
  return mix64(
      path_hash(s.module) ^ mix64(path_hash(s.name)) ^
      mix64(static_cast<uint64_t>(s.site) * 131 + static_cast<uint64_t>(s.occurrence) + 0x63616d70ull));
}

class ProgressLine {
 public:
  explicit ProgressLine(int64_t total)
      : total_(total), tty_(isatty(2)), start_(Clock::now()), last_(start_) {}
  void update(int64_t done, const std::string& what) {
    const auto now = Clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(tty_ ? 100 : 5000)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double eta = done > 0 ? s / static_cast<double>(done) * static_cast<double>(total_ - done) : 0;
    std::fprintf(stderr, "%s[%lld/%lld trials] %s  %.0f s, eta %.0f s%s", tty_ ? "\r\033[K" : "",
                 static_cast<long long>(done), static_cast<long long>(total_), what.c_str(), s, eta,
                 tty_ ? "" : "\n");
    std::fflush(stderr);
  }
  void finish() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  using Clock = std::chrono::steady_clock;
  int64_t total_;
  bool tty_;
  Clock::time_point start_, last_;
};

int run_campaign(const CampaignArgs& a) {
  train::Recipe recipe =
      a.recipe.empty() ? train::recipe_from_checkpoint(a.checkpoint) : train::load_recipe(a.recipe, a.sets);
  const YAML::Node& root = recipe.root;
  cpu_backend().set_threads(static_cast<int>(config::parse_int(root["threads"].Scalar(), "threads")));
  std::unique_ptr<data::Dataset> test = data::make_dataset(root["data"], "test");
  if (!test) throw config::RecipeError("data: this dataset has no test split");
  std::shared_ptr<models::Model> model = models::make_model(root["model"], test->meta());
  model->apply_numerics(train::numerics_policy(root["numerics"]));
  const std::string ckpt = train::resolve_checkpoint(a.checkpoint);
  train::CheckpointState st = train::load_checkpoint(ckpt, *model, nullptr);
  model->context().seed = st.seed;
  model->context().step = static_cast<uint64_t>(st.position.step);
  model->eval();

  std::vector<bool> wanted(3, false);  // weights, activations, metadata
  {
    std::stringstream ss(a.sites);
    for (std::string s; std::getline(ss, s, ',');) {
      if (s == "weights")
        wanted[0] = true;
      else if (s == "activations")
        wanted[1] = true;
      else if (s == "metadata")
        wanted[2] = true;
      else
        throw std::invalid_argument(
            fmt::format("--sites: '{}' is not a site; allowed: weights, activations, metadata", s));
    }
  }

  // The test batches, once (every trial evaluates the same ones).
  config::Args d(root["data"], "data");
  std::vector<data::Batch> batches;
  {
    data::DataLoader loader(*test, d.integer("eval_batch_size"), false, false, st.seed, 0);
    loader.start_epoch(0);
    while (true) {
      data::Batch b;  // a fresh batch each time: the loader may reuse what it is given
      if (!loader.next(b)) break;
      batches.push_back(std::move(b));
    }
  }

  // Fault-free pass, discovering the sites in the order the forward reaches them.
  std::vector<Site> sites;
  std::map<std::tuple<std::string, int, std::string>, int> seen;  // occurrences in the current batch
  set_tensor_hook([&](const Module& m, TensorSite ts, const std::string& name, const Format& f,
                      const ReadLayout& l, const Tensor& t) {
    const int k = seen[{m.path(), static_cast<int>(ts), name}]++;
    const bool known = std::any_of(sites.begin(), sites.end(), [&](const Site& s) {
      return s.module == m.path() && s.site == ts && s.name == name && s.occurrence == k;
    });
    if (known || ts == TensorSite::Gradients) return t;
    const train::CodeSpace space = train::code_space(f, l, t);
    if (wanted[ts == TensorSite::Weights ? 0 : 1])
      sites.push_back({m.path(), name, ts, false, k, space.elements, f});
    if (wanted[2] && ts == TensorSite::Weights && space.metas > 0)
      sites.push_back({m.path(), name, ts, true, k, space.metas, f});
    return t;
  });
  const EvalResult clean = evaluate_batches(*model, batches, [&](size_t) { seen.clear(); });
  set_tensor_hook(TensorHook());
  std::cout << fmt::format("fault-free: test loss {:.4f} accuracy {:.2f}% ({} targets); {} sites x {} trials",
                           clean.loss, 100 * clean.accuracy, clean.predictions.size(), sites.size(), a.trials)
            << std::endl;

  const std::string out_dir = a.out.empty() ? "." : a.out;
  fs::create_directories(out_dir);
  // Written whole at the end (train/atomic_file.h): an interrupted campaign
  // leaves the previous faults.csv, never half a table.
  std::string csv = train::csv_row({"site", "module", "tensor", "format", "elements", "trials",
                                    "mismatch_rate", "trials_with_mismatch", "mean_delta_loss",
                                    "max_delta_loss", "nonfinite_loss_trials", "mean_accuracy_drop"});
  ProgressLine progress(static_cast<int64_t>(sites.size()) * a.trials);
  plot::BarChart chart;
  chart.title = fmt::format("Single-bit faults: {} trials per site", a.trials);
  chart.x_label = "site";
  chart.y_label = "mismatch rate (fraction of test predictions changed)";
  chart.group_labels = {"mismatch rate"};
  chart.values.assign(1, {});

  int64_t done = 0;
  for (const Site& s : sites) {
    const uint64_t stream = site_stream(s);
    double mismatch_sum = 0, dloss_sum = 0, dloss_max = -INFINITY, acc_drop_sum = 0;
    int64_t finite = 0, nonfinite = 0, with_mismatch = 0;
    for (int64_t t = 0; t < a.trials; ++t) {
      // Element and bit: one draw each, keyed (seed, site, trial).
      const uint64_t idx = static_cast<uint64_t>(t);
      bool hit_once = false;
      int64_t element = -1;
      int bit = -1;
      set_tensor_hook([&](const Module& m, TensorSite ts, const std::string& name, const Format& f,
                          const ReadLayout& l, const Tensor& x) -> Tensor {
        const int k = seen[{m.path(), static_cast<int>(ts), name}]++;
        if (m.path() != s.module || ts != s.site || name != s.name || k != s.occurrence) return x;
        if (s.site == TensorSite::Activations && hit_once) return x;
        hit_once = true;
        const train::CodeSpace space = train::code_space(f, l, x);
        const int64_t codes = s.meta ? space.metas : space.elements;
        const int width = s.meta ? space.meta_bits : space.elem_bits;
        if (element < 0 || element >= codes)
          element = static_cast<int64_t>(
              train::fault_draw_below(a.seed, stream, 2 * idx, static_cast<uint64_t>(codes)));
        if (bit < 0)
          bit = static_cast<int>(
              train::fault_draw_below(a.seed, stream, 2 * idx + 1, static_cast<uint64_t>(width)));
        return train::fault_codes(f, l, x, {{element, bit, train::FaultKind::Flip, s.meta}});
      });
      const EvalResult r = evaluate_batches(*model, batches, [&](size_t) { seen.clear(); });
      set_tensor_hook(TensorHook());
      int64_t changed = 0;
      for (size_t i = 0; i < r.predictions.size(); ++i) changed += r.predictions[i] != clean.predictions[i];
      const double rate = r.predictions.empty() ? 0 : double(changed) / double(r.predictions.size());
      mismatch_sum += rate;
      with_mismatch += changed > 0;
      acc_drop_sum += clean.accuracy - r.accuracy;
      const double dl = r.loss - clean.loss;
      if (std::isfinite(dl)) {
        dloss_sum += dl;
        dloss_max = std::max(dloss_max, dl);
        ++finite;
      } else {
        ++nonfinite;
      }
      progress.update(++done, fmt::format("{} {}", site_name(s), s.label()));
    }
    const double n = static_cast<double>(std::max<int64_t>(a.trials, 1));
    csv +=
        train::csv_row({site_name(s), s.module, s.label().substr(s.module.empty() ? 0 : s.module.size() + 1),
                        format_name(s.format), fmt::format("{}", s.elements), fmt::format("{}", a.trials),
                        fmt::format("{:.6f}", mismatch_sum / n), fmt::format("{}", with_mismatch),
                        fmt::format("{:.6g}", finite ? dloss_sum / double(finite) : std::nan("")),
                        fmt::format("{:.6g}", finite ? dloss_max : std::nan("")),
                        fmt::format("{}", nonfinite), fmt::format("{:.6f}", acc_drop_sum / n)});
    chart.categories.push_back(fmt::format("{} {}",
                                           s.meta                          ? "M"
                                           : s.site == TensorSite::Weights ? "W"
                                                                           : "A",
                                           s.label()));
    chart.values[0].push_back(mismatch_sum / n);
  }
  progress.finish();
  train::write_file_atomic((fs::path(out_dir) / "faults.csv").string(), csv);
  std::cout << fmt::format("wrote {}", (fs::path(out_dir) / "faults.csv").string()) << std::endl;
  if (!sites.empty()) {
    const std::string plot_path = (fs::path(out_dir) / "faults.svg").string();
    plot::save(chart, plot_path);
    std::cout << fmt::format("wrote {}", plot_path) << std::endl;
  }
  return 0;
}

Runner add_faults_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "faults",
      "Inference fault campaign: single random bit flips per site, mismatch rate and delta-loss to CSV");
  auto a = std::make_shared<CampaignArgs>();
  cmd->add_option("recipe", a->recipe, "The recipe (YAML; default: the one stored in the checkpoint)");
  cmd->add_option("--checkpoint", a->checkpoint, "A checkpoint file or a run directory")->required();
  cmd->add_option("--trials", a->trials, "Trials per site (each a full test evaluation)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--sites", a->sites, "Comma-separated sites: weights, activations");
  cmd->add_option("--out", a->out, "Directory for faults.csv and faults.svg (default: .)");
  cmd->add_option("--seed", a->seed, "Seed of the fault draws");
  cmd->add_option("--set", a->sets, "Override a recipe key: KEY=VALUE (repeatable)");
  return [a]() -> int {
    try {
      return run_campaign(*a);
    } catch (const std::exception& e) {
      set_tensor_hook(TensorHook());
      std::fprintf(stderr, "emutrain faults: %s\n", e.what());
      return 2;
    }
  };
}

}  // namespace

EMU_COMMAND("faults", add_faults_command);

}  // namespace emu::cli
