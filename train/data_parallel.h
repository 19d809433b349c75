// Data-parallel training in the trainer (docs/parallel.md): which rows of each
// global batch this rank trains on, how per-rank losses and metrics combine,
// and the single-process equivalence mode (`parallel.equivalent_ranks: N`).
// The gradient reductions themselves split in the layers (core/comm_reduce.h).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "config/schema.h"
#include "data/dataset.h"
#include "models/model.h"

namespace emu::train {

// Keys of the recipe's optional `parallel` section.
const std::vector<config::KeySpec>& parallel_keys();

class DataParallel {
 public:
  // Reads root["parallel"] (absent: defaults) and the process's world communicator; under
  // several ranks checks that every rank resolved the same recipe (else throws naming the rank and
  // the first differing line). Installs the layers' reduction setting until destroyed.
  DataParallel(const YAML::Node& root, const std::string& recipe_yaml, models::Model& model);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  bool active() const { return mode_ != 0; }  // several ranks, or the equivalence mode
  bool writer() const { return rank_ == 0; }  // only rank 0 writes logs, metrics, checkpoints
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  std::string describe() const;  // "" when inactive

  // Cuts `batch` to this rank's contiguous share of its examples (graph batches, with a sparse
  // "adj", stay whole: every rank runs the full graph and the reductions split by node shares).
  void shard(data::Batch& batch);

  struct Step {
    float loss = 0;  // the global batch's loss (what the single process logs)
    int64_t counted = 0, correct = 0;
    Tensor seed;  // the gradient to start backward() from (undefined: ones)
  };
  // The global step's loss and counts from this rank's prediction and loss.
  Step combine(models::Model& model, const models::Prediction& p, const Tensor& loss, int64_t step);

  // Rank 0 appends "step<TAB>loss as %a<TAB>loss" per step to <run_dir>/step_losses.tsv.
  void open_step_log(const std::string& run_dir, bool append);

  // A fresh temporary directory for a silent rank's files, removed with this object.
  std::string scratch_dir();

 private:
  void check_model(bool full_rows);
  int mode_ = 0;  // 0 off, 1 emulate, 2 gather
  int rank_ = 0, ranks_ = 1;
  bool checked_ = false, full_rows_ = false;
  models::Model* model_;
  std::ofstream step_log_;
  std::string scratch_;
};

}  // namespace emu::train
