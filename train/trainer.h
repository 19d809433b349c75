// The recipe-driven trainer behind `emutrain train` (docs/recipes.md):
// builds the datasets, the model (initialised from the seed, numerics applied),
// the optimizer and the schedule; runs the epochs or steps with the training
// step in the RunContext (so every draw is keyed by it); evaluates the val and
// test splits after every epoch; writes metrics, checkpoints and a summary into
// the run directory; resumes from a checkpoint bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include "data/dataset.h"
#include "models/model.h"
#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/recipe.h"

namespace emu::train {

// The loss became NaN or infinite; what() says where (step, epoch, batch, and
// the first non-finite input, parameter, gradient or module output).
class NonFiniteLoss : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TrainOptions {
  std::string out_dir;          // "" = runs/<name>-<yyyymmdd-hhmmss> (or the resumed run's dir)
  std::string resume;           // a checkpoint file, or a run dir (its newest checkpoint); "" = fresh
  std::ostream* log = nullptr;  // log lines (default std::cout); also appended to <run dir>/log.txt
  // Test hook: called after every optimizer step with the position reached.
  std::function<void(const TrainPosition&)> after_step;
  // Test hook: called after every optimizer step with its number (1-based) and
  // the loss of its batch (the global batch's under data parallelism), so a
  // test can compare every step's loss bit for bit.
  std::function<void(int64_t step, float loss)> step_loss;
};

struct TrainSummary {
  std::string run_dir;
  std::string final_checkpoint;
  int64_t steps = 0, epochs = 0;
  double seconds = 0;
  std::map<std::string, SplitResult> final_results;  // "train", "val", "test" of the last epoch
};

// Trains as `recipe` says. Throws RecipeError, CheckpointError, NonFiniteLoss
// or the loaders' errors, each one line.
TrainSummary train_recipe(const Recipe& recipe, const TrainOptions& options);

// The recipe a resume uses when none is given: the one stored in the checkpoint
// (a file, or a run dir's newest checkpoint).
Recipe recipe_from_checkpoint(const std::string& checkpoint_or_dir);
// The checkpoint file `checkpoint_or_dir` names: itself, or a run dir's newest
// (checkpoints/*.safetensors by step, else final.safetensors).
std::string resolve_checkpoint(const std::string& checkpoint_or_dir);

// Loss and accuracy of `model` (in eval mode, no gradients) over `dataset`.
SplitResult evaluate(models::Model& model, const data::Dataset& dataset, const std::string& split,
                     int64_t batch_size, uint64_t seed, int workers);

// Builds the recipe's model for `dataset` (test split) and loads `checkpoint`,
// then evaluates the test split: `emutrain eval`.
SplitResult evaluate_checkpoint(const Recipe& recipe, const std::string& checkpoint,
                                std::string* description = nullptr);

// Every numerics override must select some module of `model`: a glob that
// matches nothing is almost always a typo, and would silently train in the
// default policy. Throws RecipeError naming the override and some module paths.
void check_overrides_match(const YAML::Node& numerics, const models::Model& model);

// Counted targets and right predictions of one prediction (argmax, first
// maximum on ties; a row with a NaN logit is never right).
void count_correct(const models::Prediction& p, int64_t* counted, int64_t* correct);

}  // namespace emu::train
