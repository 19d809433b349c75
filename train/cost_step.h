// One counted training step and one counted inference pass (docs/cost.md):
// the model runs on the CPU backend behind a CountingBackend, so the counts
// are those of the step the trainer would run, for any model and policy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/dataset.h"
#include "models/model.h"
#include "optim/optimizer.h"
#include "train/cost_counts.h"
#include "train/recipe.h"

namespace emu::train {

struct StepCounts {
  CostCounts step;       // forward, backward and the optimizer update of one batch
  CostCounts inference;  // the forward pass of the same batch in evaluation mode (no dropout, no gradients)
  int64_t batch_examples = 0;
  std::string model;  // model type and parameter count, for the report
};

// Counts `model` (on the CPU, numerics applied, initialised: its context holds
// the seed) on `batch` at step 0 with `optimizer` (null: no update). The model's parameters change by one
// step. A first uncounted evaluation pass fills the caches a layer builds once (a GCN's normalised
// adjacency), so the counts are those of every later step.
StepCounts count_step(models::Model& model, const data::Batch& batch, Optimizer* optimizer);

// The recipe's model, optimizer and first training batch (the loader's order at
// epoch 0), counted as above. Needs the recipe's data (the dataset's sizes and
// its first batch). Errors name the recipe key or the file.
StepCounts count_recipe(const Recipe& recipe);

}  // namespace emu::train
