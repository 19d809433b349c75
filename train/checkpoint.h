// Training checkpoints: everything a run needs to continue bit for bit, in one
// safetensors file (train/safetensors.h).
//   tensors   "model.<name>"      every parameter and buffer (state_dict keys)
//             "optimizer.<name>"  the optimizer state (momentum, moments, step count)
//   metadata  format "emutrain-checkpoint", version "1", model, optimizer,
//             step / epoch / batch (the position: steps done, the epoch in
//             progress, the next batch in it), seed, the running totals of the
//             epoch in progress, and the resolved recipe (YAML).
// Every random draw is Philox keyed by (seed, stream, step, index), and the data
// order by (seed, epoch), so the position and the seed are the whole RNG state.
#pragma once

#include <cstdint>
#include <string>

#include "models/model.h"
#include "optim/optimizer.h"
#include "train/safetensors.h"

namespace emu::train {

struct TrainPosition {
  int64_t step = 0;   // optimizer steps done
  int64_t epoch = 0;  // the epoch in progress (0-based)
  int64_t batch = 0;  // the next batch of that epoch
};

// Running sums of the epoch in progress (train loss and accuracy of its steps so far).
struct EpochTotals {
  double loss_sum = 0;  // sum over steps of loss * counted targets
  int64_t counted = 0;  // targets that count (not -1)
  int64_t correct = 0;
  int64_t examples = 0;  // examples seen
  double seconds = 0;    // training time spent in the epoch (not bit-exact, informational)
};

struct CheckpointState {
  TrainPosition position;
  uint64_t seed = 0;
  EpochTotals totals;
  std::string recipe_yaml;     // the resolved recipe
  std::string model_type;      // model.type
  std::string optimizer_type;  // optimizer.type
};

// Writes model, optimizer (may be null) and state to `path` atomically.
void save_checkpoint(const std::string& path, const models::Model& model, const Optimizer* optimizer,
                     const CheckpointState& state);

// Reads only the metadata (recipe, position, ...) of a checkpoint, validating the file.
CheckpointState read_checkpoint_state(const std::string& path);

// Loads `path` into model (and optimizer unless null) and returns its state.
// Errors are one line naming the file: "checkpoint X: missing tensor
// model.fc.weight", "... tensor model.fc.weight has shape (10, 84), the model
// wants (10, 120)", "corrupt checkpoint X: header length ... exceeds file size ...".
CheckpointState load_checkpoint(const std::string& path, models::Model& model, Optimizer* optimizer);

}  // namespace emu::train
