#include "train/trainer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "config/args.h"
#include "core/autograd.h"
#include "core/backend.h"
#include "core/csr.h"
#include "core/device_select.h"
#include "core/sparsity.h"
#include "data/loader.h"
#include "data/registry.h"
#include "models/registry.h"
#include "numerics/format_spec.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "train/atomic_file.h"
#include "train/data_parallel.h"
#include "train/faults.h"
#include "train/json.h"
#include "train/progress.h"
#include "train/recipe_optimizer.h"
#include "train/split_report.h"

namespace emu::train {

using config::Args;
using config::join_names;
using config::parse_int;
using config::RecipeError;

namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// Makes the recipe's `device` the backend of its tensors. A provider that cannot run here (cuda
// with no GPU visible) says why in one line, which becomes a recipe error naming the key.
Device select_device(const std::string& name) {
  try {
    return activate_device(name);
  } catch (const std::exception& e) {
    const std::string why = e.what();
    throw RecipeError(why.rfind("device:", 0) == 0 ? why : fmt::format("device: {}: {}", name, why));
  }
}

// The device a model's parameters live on (Module::to puts them all on one).
Device model_device(const Module& model) {
  const std::vector<Tensor> params = model.parameters();
  return params.empty() ? Device::Cpu : params.front().device();
}

// Puts a batch on `device`: the loaders build batches on the CPU, the model reads them where it
// computes. Sparse matrices keep their host index arrays; their values are uploaded, once per
// matrix object (a graph dataset hands out the same adjacency every step).
class BatchUploader {
 public:
  explicit BatchUploader(Device device) : device_(device) {}
  void upload(data::Batch& batch) {
    if (device_ == Device::Cpu) return;
    for (auto& [_, t] : batch.tensors) t = t.to(device_);
    for (auto& [name, m] : batch.sparse) {
      if (!m || m->values.device() == device_) continue;
      auto& [source, uploaded] = sparse_[name];
      if (source != m) {
        source = m;
        uploaded = std::make_shared<const CsrMatrix>(csr_with_values(*m, m->values.to(device_)));
      }
      m = uploaded;
    }
  }

 private:
  Device device_;
  // Per field: the host matrix last seen (held, so its address cannot be reused) and its upload.
  std::map<std::string, std::pair<std::shared_ptr<const CsrMatrix>, std::shared_ptr<const CsrMatrix>>>
      sparse_;
};

std::unique_ptr<LrSchedule> make_schedule(const YAML::Node& section, double lr, int64_t total_steps,
                                          int64_t steps_per_epoch) {
  Args a(section, "schedule");
  const std::string type = a.string("type");
  if (type == "step") {
    int64_t size = a.integer("step_size");
    if (size == 0) size = a.integer("step_epochs") * steps_per_epoch;
    return std::make_unique<StepSchedule>(lr, size, a.number("gamma"));
  }
  if (type == "cosine") return std::make_unique<CosineSchedule>(lr, total_steps, a.number("min_lr"));
  if (type == "warmup_cosine") {
    int64_t warmup = a.integer("warmup_steps");
    if (warmup == 0) warmup = a.integer("warmup_epochs") * steps_per_epoch;
    if (warmup >= total_steps)
      throw RecipeError(fmt::format("schedule: warm-up of {} steps is not shorter than the run's {} steps",
                                    warmup, total_steps));
    auto inner = std::make_shared<CosineSchedule>(lr, total_steps - warmup, a.number("min_lr"));
    return std::make_unique<WarmupSchedule>(inner, warmup);
  }
  return std::make_unique<ConstantSchedule>(lr);
}

}  // namespace

void check_overrides_match(const YAML::Node& numerics, const models::Model& model) {
  if (!numerics["overrides"]) return;
  std::vector<std::string> paths;
  for (const auto& [name, _] : model.named_modules()) paths.push_back(name);
  for (size_t i = 0; i < numerics["overrides"].size(); ++i) {
    const std::string glob = numerics["overrides"][i]["match"].Scalar();
    bool any =
        std::any_of(paths.begin(), paths.end(), [&](const std::string& p) { return glob_match(glob, p); });
    if (!any) {
      std::vector<std::string> some(paths.begin(), paths.begin() + std::min<size_t>(paths.size(), 12));
      throw RecipeError(
          fmt::format("numerics.overrides[{}].match: '{}' matches no module of the model (modules: {}{})", i,
                      glob, join_names(some), paths.size() > some.size() ? ", ..." : ""));
    }
  }
}

namespace {

int64_t parameter_count(const models::Model& m) {
  int64_t n = 0;
  for (const auto& [_, p] : m.named_parameters()) n += p.numel();
  return n;
}

std::string first_nonfinite(const std::vector<std::pair<std::string, Tensor>>& tensors, bool grads) {
  for (const auto& [name, t] : tensors) {
    Tensor v = grads ? t.grad() : t;
    if (v.defined() && models::has_nonfinite(v)) return name;
  }
  return "";
}

// Where a non-finite loss first appeared, checked from the inputs forward.
std::string diagnose(models::Model& model, const data::Batch& batch) {
  for (const auto& [name, t] : batch.tensors)
    if (models::has_nonfinite(t)) return fmt::format("the input batch field '{}' holds NaN/Inf", name);
  std::string p = first_nonfinite(model.named_parameters(), false);
  if (!p.empty()) return fmt::format("parameter '{}' is non-finite (written by the previous update)", p);
  std::string g = first_nonfinite(model.named_parameters(), true);
  if (!g.empty()) return fmt::format("the previous step's gradient of '{}' was non-finite", g);
  std::string b = first_nonfinite(model.named_buffers(), false);
  if (!b.empty()) return fmt::format("buffer '{}' is non-finite", b);
  // Parameters and inputs are finite: run the forward again (same step, same
  // draws) and let the model report the first module whose output is not.
  std::string module;
  {
    NoGradGuard no_grad;
    model.start_probe();
    try {
      models::Prediction pr = model.predict(batch, "train");
      module = model.stop_probe();
      if (module.empty() && models::has_nonfinite(pr.logits)) module = "(the model's output)";
    } catch (...) {
      model.stop_probe();
    }
  }
  if (!module.empty())
    return fmt::format("first non-finite output: module '{}' (its inputs and parameters are finite)", module);
  return "the loss computation itself (logits are finite; are all targets ignored?)";
}

std::string newest_in(const fs::path& dir) {
  std::string best;
  int64_t best_step = -1;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) != 0 || e.path().extension() != ".safetensors") continue;
    int64_t step = std::atoll(name.c_str() + 5);
    if (step > best_step) best_step = step, best = e.path().string();
  }
  return best;
}

// Deletes the oldest periodic checkpoints beyond `keep` (0 = keep all).
void prune_checkpoints(const fs::path& dir, int64_t keep) {
  if (keep <= 0) return;
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) == 0 && e.path().extension() == ".safetensors")
      found.push_back({std::atoll(name.c_str() + 5), e.path()});
  }
  std::sort(found.begin(), found.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < found.size(); ++i) fs::remove(found[i].second, ec);
}

std::string describe_summary(const TrainSummary& s, const BestAccuracy& best) {
  std::string text =
      fmt::format("done: {} epochs, {} steps in {}", s.epochs, s.steps, format_duration(s.seconds));
  for (const char* split : {"val", "test"}) {
    auto it = s.final_results.find(split);
    if (it == s.final_results.end()) continue;
    text += fmt::format("; final {} acc {:.2f}%", split, 100 * it->second.accuracy);
    auto b = best.by_split.find(split);
    if (b != best.by_split.end())
      text += fmt::format(" (best {:.2f}% at epoch {})", 100 * b->second.first, b->second.second);
  }
  return text + "; checkpoint " + s.final_checkpoint;
}

void write_summary(const std::string& run_dir, const std::string& name, const TrainSummary& s,
                   const BestAccuracy& best) {
  std::ostringstream out;
  out << "{\"name\":" << json_quote(name) << ",\"epochs\":" << s.epochs << ",\"steps\":" << s.steps
      << ",\"seconds\":" << json_number(s.seconds) << ",\"final\":{";
  bool first = true;
  for (const auto& [split, r] : s.final_results) {
    out << (first ? "" : ",") << json_quote(split) << ":{\"loss\":" << json_number(r.loss)
        << ",\"acc\":" << json_number(r.accuracy) << ",\"count\":" << r.counted << "}";
    first = false;
  }
  out << "},\"best\":{";
  first = true;
  for (const auto& [split, b] : best.by_split) {
    out << (first ? "" : ",") << json_quote(split) << ":{\"acc\":" << json_number(b.first)
        << ",\"epoch\":" << b.second << "}";
    first = false;
  }
  out << "},\"checkpoint\":" << json_quote(s.final_checkpoint) << "}\n";
  // Atomic: a sweep takes a parseable summary.json as "this run finished".
  write_file_atomic((fs::path(run_dir) / "summary.json").string(), out.str());
}

struct EvalSet {
  std::string split;
  std::unique_ptr<data::Dataset> dataset;
};

}  // namespace

void count_correct(const models::Prediction& p, int64_t* counted, int64_t* correct) {
  // Accuracy is logged: the logits and targets are downloaded (row-major) and counted on the host.
  const std::vector<float> lv = p.logits.to_vector(), tv = p.targets.to_vector();
  const int64_t rows = p.logits.dim(0), classes = p.logits.numel() / std::max<int64_t>(rows, 1);
  const float* l = lv.data();
  const float* t = tv.data();
  for (int64_t r = 0; r < rows; ++r) {
    if (t[r] < 0) continue;
    ++*counted;
    const float* row = l + r * classes;
    int64_t best = 0;
    bool nan = false;
    for (int64_t c = 0; c < classes; ++c) {
      if (std::isnan(row[c])) nan = true;
      if (row[c] > row[best]) best = c;
    }
    if (!nan && best == static_cast<int64_t>(t[r])) ++*correct;
  }
}

SplitResult evaluate(models::Model& model, const data::Dataset& dataset, const std::string& split,
                     int64_t batch_size, uint64_t seed, int workers) {
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  data::DataLoader loader(dataset, batch_size, false, false, seed, workers);
  loader.start_epoch(0);
  BatchUploader uploader(model_device(model));
  data::Batch batch;
  double loss_sum = 0;
  int64_t counted = 0, correct = 0;
  while (loader.next(batch)) {
    uploader.upload(batch);
    models::Prediction p = model.predict(batch, split);
    int64_t c = 0;
    count_correct(p, &c, &correct);
    if (c > 0) loss_sum += static_cast<double>(model.loss(p).item()) * static_cast<double>(c);
    counted += c;
  }
  model.train(was_training);
  SplitResult r;
  r.counted = counted;
  r.loss = counted > 0 ? loss_sum / static_cast<double>(counted) : std::nan("");
  r.accuracy = counted > 0 ? static_cast<double>(correct) / static_cast<double>(counted) : std::nan("");
  return r;
}

std::string resolve_checkpoint(const std::string& checkpoint_or_dir) {
  fs::path p(checkpoint_or_dir);
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return checkpoint_or_dir;
  if (fs::exists(p / "final.safetensors", ec)) return (p / "final.safetensors").string();
  std::string newest = newest_in(p / "checkpoints");
  if (newest.empty()) newest = newest_in(p);
  if (newest.empty())
    throw CheckpointError(
        fmt::format("no checkpoint in {} (expected final.safetensors or checkpoints/step-*.safetensors)",
                    checkpoint_or_dir));
  return newest;
}

Recipe recipe_from_checkpoint(const std::string& checkpoint_or_dir) {
  const std::string path = resolve_checkpoint(checkpoint_or_dir);
  CheckpointState s = read_checkpoint_state(path);
  return parse_recipe(s.recipe_yaml, path + " (its stored recipe)");
}

SplitResult evaluate_checkpoint(const Recipe& recipe, const std::string& checkpoint,
                                std::string* description) {
  const Device device = select_device(recipe.root["device"].Scalar());
  cpu_backend().set_threads(static_cast<int>(parse_int(recipe.root["threads"].Scalar(), "threads")));
  YAML::Node data_section = recipe.root["data"];
  std::unique_ptr<data::Dataset> test = data::make_dataset(data_section, "test");
  if (!test) throw RecipeError("data: this dataset has no test split");
  std::shared_ptr<models::Model> model = models::make_model(recipe.root["model"], test->meta());
  model->apply_numerics(numerics_policy(recipe.root["numerics"]));
  model->to(device);  // the checkpoint's CPU tensors are uploaded into it
  const std::string path = resolve_checkpoint(checkpoint);
  CheckpointState s = load_checkpoint(path, *model, nullptr);
  model->context().seed = s.seed;
  model->context().step = static_cast<uint64_t>(s.position.step);
  if (description) *description = test->describe();
  Args d(data_section, "data");
  return evaluate(*model, *test, "test", d.integer("eval_batch_size"), s.seed,
                  static_cast<int>(d.integer("workers")));
}

TrainSummary train_recipe(const Recipe& recipe, const TrainOptions& options) {
  const YAML::Node& root = recipe.root;
  std::ostream& out = options.log ? *options.log : std::cout;
  const std::string device_choice = root["device"].Scalar();
  const Device device = select_device(device_choice);
  cpu_backend().set_threads(static_cast<int>(parse_int(root["threads"].Scalar(), "threads")));
  const uint64_t seed = static_cast<uint64_t>(parse_int(root["seed"].Scalar(), "seed"));

  // Resume: the checkpoint decides the run dir unless --out says otherwise.
  std::string resume_path;
  std::optional<CheckpointState> resumed_state;
  if (!options.resume.empty()) {
    resume_path = resolve_checkpoint(options.resume);
    resumed_state = read_checkpoint_state(resume_path);
  }
  std::string run_dir = options.out_dir;
  if (run_dir.empty() && !resume_path.empty()) {
    fs::path parent = fs::path(resume_path).parent_path();
    run_dir = (parent.filename() == "checkpoints" ? parent.parent_path() : parent).string();
    if (run_dir.empty()) run_dir = ".";
  }
  if (run_dir.empty()) run_dir = (fs::path("runs") / (recipe.name() + "-" + timestamp())).string();
  // Lines for the log, held until the run dir exists: nothing is created
  // before the data and the model have been built without error.
  std::vector<std::string> early = {"device: " + device_description(device_choice)};

  // Data.
  YAML::Node data_section = root["data"];
  Args d(data_section, "data");
  std::unique_ptr<data::Dataset> train_set = data::make_dataset(data_section, "train");
  std::vector<EvalSet> eval_sets;
  for (const char* split : {"val", "test"}) {
    std::unique_ptr<data::Dataset> ds = data::make_dataset(data_section, split);
    if (ds) eval_sets.push_back({split, std::move(ds)});
  }
  early.push_back(fmt::format("data: train {}", train_set->describe()));
  for (const auto& e : eval_sets) early.push_back(fmt::format("data: {} {}", e.split, e.dataset->describe()));
  const int workers = static_cast<int>(d.integer("workers"));
  data::DataLoader loader(*train_set, d.integer("batch_size"), d.flag("shuffle"), d.flag("drop_last"), seed,
                          workers);
  const int64_t per_epoch = loader.batches_per_epoch();
  if (per_epoch == 0)
    throw RecipeError(fmt::format("data: the training set ({} examples) gives no batch of batch_size {}{}",
                                  train_set->size(), d.integer("batch_size"),
                                  d.flag("drop_last") ? " with drop_last" : ""));
  const bool by_steps = root["steps"] && !root["steps"].IsNull();
  const int64_t total_steps = by_steps ? parse_int(root["steps"].Scalar(), "steps")
                                       : parse_int(root["epochs"].Scalar(), "epochs") * per_epoch;
  const int64_t total_epochs = (total_steps + per_epoch - 1) / per_epoch;

  // Model, numerics, optimizer, schedule.
  std::shared_ptr<models::Model> model = models::make_model(root["model"], train_set->meta());
  model->initialize(seed);  // on the host (Philox draws), then moved: the same bits on every device
  model->to(device);
  const NumericsPolicy policy = numerics_policy(root["numerics"]);
  check_overrides_match(root["numerics"], *model);
  model->apply_numerics(policy);
  model->train();
  // Data parallelism (docs/parallel.md): ranks agree on the recipe; only rank 0 writes.
  DataParallel dp(root, recipe.to_yaml(), *model);
  if (dp.active()) early.push_back(dp.describe());
  // N:M mask statistics (docs/sparsity.md) and fault injection (docs/faults.md) for this run.
  MaskMonitorScope mask_scope(*model);
  FaultInjector faults(parse_faults(root["faults"]));
  if (!faults.specs().empty()) {
    faults.install();
    early.push_back(fmt::format("faults: {} fault specs installed (docs/faults.md)", faults.specs().size()));
  }
  std::unique_ptr<Optimizer> optimizer = make_optimizer(root["optimizer"], model->named_parameters());
  Args opt_args(root["optimizer"], "optimizer");
  const double clip = opt_args.number("clip_grad_norm");
  std::unique_ptr<LrSchedule> schedule =
      make_schedule(root["schedule"], opt_args.number("lr"), total_steps, per_epoch);
  early.push_back(fmt::format("model: {} ({} parameters); numerics: {}", root["model"]["type"].Scalar(),
                              parameter_count(*model), policy.resolve("").describe()));
  early.push_back(fmt::format("optimizer: {}; {} steps = {} epochs of {} batches", opt_args.string("type"),
                              total_steps, total_epochs, per_epoch));

  CheckpointState state;
  state.seed = seed;
  state.recipe_yaml = recipe.to_yaml();
  state.model_type = root["model"]["type"].Scalar();
  state.optimizer_type = opt_args.string("type");
  if (!resume_path.empty()) {
    if (resumed_state->model_type != state.model_type ||
        resumed_state->optimizer_type != state.optimizer_type)
      throw CheckpointError(fmt::format(
          "checkpoint {}: it holds model {} with optimizer {}, the recipe wants {} with {}", resume_path,
          resumed_state->model_type, resumed_state->optimizer_type, state.model_type, state.optimizer_type));
    if (resumed_state->seed != seed)
      throw CheckpointError(fmt::format("checkpoint {}: written with seed {}, the recipe says {}",
                                        resume_path, resumed_state->seed, seed));
    CheckpointState loaded = load_checkpoint(resume_path, *model, optimizer.get());
    state.position = loaded.position;
    state.totals = loaded.totals;
    if (loaded.recipe_yaml != state.recipe_yaml)
      early.push_back(
          "note: the recipe differs from the one stored in the checkpoint; the result will differ from an "
          "uninterrupted run of either");
    early.push_back(fmt::format("resumed from {} at step {} (epoch {}, batch {})", resume_path,
                                state.position.step, state.position.epoch + 1, state.position.batch));
  }

  // Ranks other than 0 are silent: their files go to a scratch dir removed with dp.
  std::ofstream silent;  // never opened: writes are discarded
  if (!dp.writer()) run_dir = dp.scratch_dir();
  fs::create_directories(fs::path(run_dir) / "checkpoints");
  RunLog log(dp.writer() ? out : silent, (fs::path(run_dir) / "log.txt").string(), !resume_path.empty());
  dp.open_step_log(run_dir, !resume_path.empty());
  write_file_atomic(
      (fs::path(run_dir) / "recipe.yaml").string(),
      "# resolved recipe (after --set and defaults) of " + recipe.source + "\n" + recipe.to_yaml());
  log.line(fmt::format("run dir: {}", run_dir));
  for (const std::string& l : early) log.line(l);

  const fs::path ckpt_dir = fs::path(run_dir) / "checkpoints";
  Args ck(root["checkpoint"], "checkpoint");
  const int64_t every_steps = ck.integer("every_steps"), every_epochs = ck.integer("every_epochs"),
                keep = ck.integer("keep");
  auto save = [&](const std::string& path) {
    if (dp.writer()) save_checkpoint(path, *model, optimizer.get(), state);
  };
  auto save_periodic = [&] {
    save((ckpt_dir / fmt::format("step-{:08d}.safetensors", state.position.step)).string());
    prune_checkpoints(ckpt_dir, keep);
  };

  MetricsFiles metrics(run_dir, resume_path.empty() ? -1 : state.position.step);
  Args lg(root["logging"], "logging");
  Progress progress(lg.string("progress"), total_steps, state.position.step);
  const int64_t log_every = lg.integer("every_steps");
  log.set_progress(&progress);

  TrainSummary summary;
  summary.run_dir = run_dir;
  const Clock::time_point run_start = Clock::now();
  auto& ctx = model->context();
  TrainPosition& pos = state.position;
  EpochTotals& totals = state.totals;
  float lr = schedule->lr_at(pos.step);
  BatchUploader uploader(device);
  data::Batch batch;

  while (pos.epoch < total_epochs) {
    const Clock::time_point epoch_start = Clock::now();
    const double seconds_before = totals.seconds;
    if (pos.batch < per_epoch && pos.step < total_steps) {
      loader.start_epoch(pos.epoch, pos.batch);
      while (pos.batch < per_epoch && pos.step < total_steps) {
        if (!loader.next(batch)) throw std::logic_error("data loader ended an epoch early");
        const int64_t global_examples = batch.size;
        dp.shard(batch);
        uploader.upload(batch);  // after sharding: each rank uploads its share only
        ctx.step = static_cast<uint64_t>(pos.step);
        lr = schedule->lr_at(pos.step);
        optimizer->set_lr(lr);
        models::Prediction p = model->predict(batch, "train");
        Tensor loss = model->loss(p);
        const DataParallel::Step dps = dp.combine(*model, p, loss, pos.step);  // the global batch's loss
        const float loss_value = dps.loss;
        if (!std::isfinite(loss_value)) {
          progress.clear();
          throw NonFiniteLoss(fmt::format("loss became {} at step {} (epoch {}, batch {}): {}",
                                          std::isnan(loss_value) ? "NaN" : "infinite", pos.step + 1,
                                          pos.epoch + 1, pos.batch + 1, diagnose(*model, batch)));
        }
        optimizer->zero_grad();
        loss.backward(dps.seed);
        if (clip > 0) clip_grad_norm(model->named_parameters(), clip);
        optimizer->step();
        const int64_t counted = dps.counted;
        totals.correct += dps.correct;
        totals.counted += counted;
        totals.loss_sum += static_cast<double>(loss_value) * static_cast<double>(counted);
        totals.examples += global_examples;
        ++pos.step;
        ++pos.batch;
        totals.seconds = seconds_before + seconds_since(epoch_start);
        const double avg_loss = totals.counted ? totals.loss_sum / static_cast<double>(totals.counted) : 0;
        const double avg_acc =
            totals.counted ? static_cast<double>(totals.correct) / static_cast<double>(totals.counted) : 0;
        const double rate = totals.seconds > 0 ? static_cast<double>(totals.examples) / totals.seconds : 0;
        progress.update(pos, total_epochs, per_epoch, avg_loss, avg_acc, rate);
        if (!progress.active() && log_every > 0 && pos.step % log_every == 0)
          log.line(fmt::format("epoch {}/{} step {}/{}: loss {:.4f} acc {:.2f}% lr {:.4g} {:.0f} samples/s",
                               pos.epoch + 1, total_epochs, pos.step, total_steps, avg_loss, 100 * avg_acc,
                               lr, rate));
        if (every_steps > 0 && pos.step % every_steps == 0) save_periodic();
        if (options.step_loss) options.step_loss(pos.step, loss_value);
        if (options.after_step) options.after_step(pos);
      }
    }
    // End of the epoch: evaluate, record, checkpoint.
    const double train_seconds = totals.seconds;
    const Clock::time_point eval_start = Clock::now();
    MetricsRow row;
    row.epoch = pos.epoch + 1;
    row.step = pos.step;
    row.lr = lr;
    SplitResult tr;
    tr.counted = totals.counted;
    tr.loss = totals.counted ? totals.loss_sum / static_cast<double>(totals.counted) : std::nan("");
    tr.accuracy = totals.counted ? static_cast<double>(totals.correct) / static_cast<double>(totals.counted)
                                 : std::nan("");
    row.splits["train"] = tr;
    for (const auto& e : eval_sets)
      if (dp.writer())  // the other ranks hold the same weights and write nothing
        row.splits[e.split] =
            evaluate(*model, *e.dataset, e.split, d.integer("eval_batch_size"), seed, workers);
    row.seconds = train_seconds + seconds_since(eval_start);
    row.samples_per_second = train_seconds > 0 ? static_cast<double>(totals.examples) / train_seconds : 0;
    progress.clear();
    metrics.write(row);
    log.line(describe_row(row, total_epochs));
    for (const std::string& l : report_masks_and_faults(&faults, run_dir, row.epoch, row.step)) log.line(l);
    for (const std::string& l : report_split_blocks(run_dir, row.epoch, row.step)) log.line(l);
    summary.final_results = row.splits;
    ++pos.epoch;
    pos.batch = 0;
    totals = EpochTotals{};
    if (every_epochs > 0 && pos.epoch % every_epochs == 0) save_periodic();
    if (pos.step >= total_steps) break;
  }
  progress.clear();

  summary.final_checkpoint = (fs::path(run_dir) / "final.safetensors").string();
  save(summary.final_checkpoint);
  summary.steps = pos.step;
  summary.epochs = pos.epoch;
  summary.seconds = seconds_since(run_start);
  write_summary(run_dir, recipe.name(), summary, metrics.best());
  log.line(describe_summary(summary, metrics.best()));
  return summary;
}

}  // namespace emu::train
