#include "train/data_parallel.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <typeinfo>

#include "core/autograd.h"
#include "core/comm.h"
#include "core/comm_reduce.h"
#include "layers/batchnorm.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/gcn.h"
#include "layers/linear.h"
#include "train/trainer.h"

namespace emu::train {

using config::int_key;
using config::KeySpec;
using config::number_key;
using config::parse_int;
using config::parse_number;
using config::RecipeError;

namespace {

std::string type_name(const Module& m) {
  int status = 0;
  const char* mangled = typeid(m).name();
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                           std::free);
  return status == 0 && d ? d.get() : mangled;
}

bool draws(const Format& f) { return is_stochastic(f); }

}  // namespace

const std::vector<KeySpec>& parallel_keys() {
  static const std::vector<KeySpec> k = {
      int_key("equivalent_ranks", "0",
              "single process: compute what N data-parallel ranks would (grad-weight reductions chunked by "
              "the per-rank share); 0 = off",
              0, 4096),
      number_key("timeout_s", "300", "seconds any rank waits in a collective before the job aborts", 1),
  };
  return k;
}

DataParallel::DataParallel(const YAML::Node& root, const std::string& recipe_yaml, models::Model& model)
    : model_(&model) {
  YAML::Node s = root["parallel"];
  int64_t equivalent = 0;
  double timeout = 300;
  if (s && s.IsMap()) {
    if (s["equivalent_ranks"])
      equivalent = parse_int(s["equivalent_ranks"].Scalar(), "parallel.equivalent_ranks");
    if (s["timeout_s"]) timeout = parse_number(s["timeout_s"].Scalar(), "parallel.timeout_s");
  }
  Communicator& w = world();
  w.set_timeout(timeout);
  rank_ = w.rank();
  ranks_ = w.size();
  DataParallelConfig c;
  if (w.name() != "local") {
    if (equivalent > 0)
      throw RecipeError(
          fmt::format("parallel.equivalent_ranks: {} is for single-process runs; this is rank {} of {} "
                      "({})",
                      equivalent, rank_, ranks_, w.name()));
    w.agree("resolved recipe", recipe_yaml);
    mode_ = 2;
    c.mode = DataParallelConfig::Mode::Gather;
    c.ranks = ranks_;
    c.rank = rank_;
  } else if (equivalent > 0) {
    mode_ = 1;
    ranks_ = static_cast<int>(equivalent);
    c.mode = DataParallelConfig::Mode::Emulate;
    c.ranks = ranks_;
  }
  set_data_parallel(c);
}

DataParallel::~DataParallel() {
  set_data_parallel(DataParallelConfig{});
  std::error_code ec;
  if (!scratch_.empty()) std::filesystem::remove_all(scratch_, ec);
}

std::string DataParallel::scratch_dir() {
  if (scratch_.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "emutrain-rank-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw std::runtime_error("parallel: cannot create a scratch directory in " +
                               std::filesystem::temp_directory_path().string());
    scratch_ = pattern;
  }
  return scratch_;
}

std::string DataParallel::describe() const {
  if (mode_ == 0) return "";
  if (mode_ == 1)
    return fmt::format("parallel: one process computing the {}-rank data-parallel result", ranks_);
  return fmt::format("parallel: rank {} of {} ({}), {}", rank_, ranks_, world().name(),
                     full_rows_ ? "full graph on every rank, grad-weight reductions split by node shares"
                                : "each rank trains on its share of every batch");
}

void DataParallel::check_model(bool full_rows) {
  if (checked_) return;
  checked_ = true;
  if (!full_rows && mode_ == 2 && (ranks_ & (ranks_ - 1)) != 0)
    throw RecipeError(fmt::format(
        "parallel: {} ranks: batch-sharded training needs a power-of-two rank count (the loss mean's scale "
        "1/count is then exactly (1/N)/count_per_rank)",
        ranks_));
  for (const auto& [path, m] : model_->named_modules()) {
    const LayerNumerics& n = m->numerics();
    if (!full_rows) {
      if (dynamic_cast<const BatchNorm*>(m.get()))
        throw RecipeError(
            fmt::format("parallel: module '{}' is a batch norm; its batch statistics are not combined "
                        "across ranks yet (data-parallel needs a model without batch norm)",
                        path));
      if (auto* d = dynamic_cast<const Dropout*>(m.get()); d && d->p > 0)
        throw RecipeError(
            fmt::format("parallel: module '{}' (dropout p={}) draws by batch-local element index; "
                        "batch-sharded data-parallel needs dropout 0",
                        path, d->p));
      if (draws(n.activations) || draws(n.grads))
        throw RecipeError(
            fmt::format("parallel: module '{}' reads activations or gradients with stochastic "
                        "rounding, whose draws are keyed by batch-local indices",
                        path));
    }
    if (draws(n.mac.acc) || draws(n.mac.out) || draws(n.mac.acc_outer) || draws(n.grads) ||
        (!n.mac.mul_exact && draws(n.mac.mul)))
      throw RecipeError(
          fmt::format("parallel: module '{}' uses stochastic rounding (:sr) in its reductions; "
                      "data-parallel reductions do not define split draw sites yet",
                      path));
    bool own_params = false;
    for (const auto& [name, _] : m->named_parameters())
      if (name.find('.') == std::string::npos) own_params = true;
    const bool supported = dynamic_cast<const Linear*>(m.get()) || dynamic_cast<const Conv2d*>(m.get()) ||
                           dynamic_cast<const GCNConv*>(m.get());
    if (own_params && !supported)
      throw RecipeError(
          fmt::format("parallel: module '{}' ({}) has parameters whose gradient reductions do not "
                      "split by rank yet (supported: Linear, Conv2d, GCNConv)",
                      path, type_name(*m)));
  }
}

void DataParallel::shard(data::Batch& batch) {
  if (mode_ == 0) return;
  const bool graph = batch.sparse.count("adj") != 0;
  check_model(graph);
  if (graph != full_rows_) {
    full_rows_ = graph;
    DataParallelConfig c = data_parallel();
    c.full_rows = graph;
    set_data_parallel(c);
  }
  if (graph || mode_ == 1) return;
  const int64_t B = batch.size;
  if (B % ranks_ != 0)
    throw RecipeError(
        fmt::format("parallel: a batch of {} examples does not split into {} equal shares (use a "
                    "batch_size multiple of {} and drop_last: true)",
                    B, ranks_, ranks_));
  const int64_t share = B / ranks_;
  for (auto& [name, t] : batch.tensors) {
    if (t.ndim() == 0 || t.dim(0) != B)
      throw RecipeError(
          fmt::format("parallel: batch field '{}' of shape {} has no leading dimension of {} examples", name,
                      shape_string(t.shape()), B));
    t = t.narrow(0, share * rank_, share).contiguous();
  }
  batch.size = share;
}

DataParallel::Step DataParallel::combine(models::Model& model, const models::Prediction& p,
                                         const Tensor& loss, int64_t step) {
  if (const char* fail = std::getenv("EMUTRAIN_TEST_FAIL_RANK");
      fail && mode_ == 2 && std::atoi(fail) == rank_)
    throw std::runtime_error(
        fmt::format("test hook EMUTRAIN_TEST_FAIL_RANK: failing on purpose at step {}", step + 1));
  Step s;
  s.loss = loss.item();
  count_correct(p, &s.counted, &s.correct);
  if (mode_ != 0 && !full_rows_) {
    // Per-rank (loss, counted, correct) in rank order; the logged loss is the count-weighted mean of the
    // rank losses in binary64, the counts are integer sums.
    std::vector<double> parts;
    if (mode_ == 2) {
      parts = world().allgather_doubles(
          {static_cast<double>(s.loss), static_cast<double>(s.counted), static_cast<double>(s.correct)});
      for (int r = 1; r < ranks_; ++r)
        if (parts[static_cast<size_t>(3 * r + 1)] != parts[1])
          throw std::runtime_error(fmt::format(
              "parallel: rank {} counts {} targets in step {}, rank 0 {}: the loss mean needs equal shares",
              r, parts[static_cast<size_t>(3 * r + 1)], step + 1, parts[1]));
      s.seed = Tensor::scalar(1.0f / static_cast<float>(ranks_), loss.device());
    } else {
      NoGradGuard no_grad;
      const int64_t rows = p.logits.dim(0);
      if (rows % ranks_ != 0)
        throw RecipeError(fmt::format("parallel.equivalent_ranks: {} predictions do not split into {} shares",
                                      rows, ranks_));
      const int64_t share = rows / ranks_;
      for (int r = 0; r < ranks_; ++r) {
        models::Prediction q{p.logits.narrow(0, r * share, share), p.targets.narrow(0, r * share, share)};
        int64_t c = 0, k = 0;
        count_correct(q, &c, &k);
        parts.push_back(static_cast<double>(model.loss(q).item()));
        parts.push_back(static_cast<double>(c));
        parts.push_back(static_cast<double>(k));
      }
    }
    double weighted = 0;
    s.counted = s.correct = 0;
    for (int r = 0; r < ranks_; ++r) {
      weighted += parts[static_cast<size_t>(3 * r)] * parts[static_cast<size_t>(3 * r + 1)];
      s.counted += static_cast<int64_t>(parts[static_cast<size_t>(3 * r + 1)]);
      s.correct += static_cast<int64_t>(parts[static_cast<size_t>(3 * r + 2)]);
    }
    s.loss = s.counted > 0 ? static_cast<float>(weighted / static_cast<double>(s.counted)) : s.loss;
  }
  if (step_log_.is_open()) {
    char hex[64];
    std::snprintf(hex, sizeof hex, "%a", static_cast<double>(s.loss));
    step_log_ << step + 1 << '\t' << hex << '\t' << fmt::format("{:.9g}", s.loss) << '\n' << std::flush;
  }
  return s;
}

void DataParallel::open_step_log(const std::string& run_dir, bool append) {
  if (mode_ == 0 || !writer()) return;
  step_log_.open(run_dir + "/step_losses.tsv", append ? std::ios::app : std::ios::trunc);
}

}  // namespace emu::train
