// Model: what the trainer trains. One interface for every model family:
//   image / series classification  one label per example: logits (N, C), targets (N)
//   token-level sequence prediction logits (N*T, V), targets (N*T) with padding -1
//   transductive node classification the split picks a node mask: logits (V, C),
//                                    targets (V) with -1 outside the split's mask
// The trainer takes the loss (cross-entropy ignoring -1 targets by default) and
// the accuracy over the targets that are not -1.
//
// A model is built from its recipe section (checked against the arguments it
// registered, models/registry.h) and the dataset's meta() sizes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/module.h"
#include "data/dataset.h"
#include "layers/loss.h"

namespace emu::models {

struct Prediction {
  Tensor logits;   // (M, C)
  Tensor targets;  // (M) class ids as floats; -1 = not counted (padding, nodes outside the split)
};

// The dataset sizes a model is built from ("classes", "channels", ...).
using DataMeta = std::map<std::string, int64_t>;
// meta[key], or an error naming the model, the key and the keys the dataset has.
int64_t meta_at(const DataMeta& meta, const std::string& key, const std::string& model);

class Model : public Module {
 public:
  // Registers the loss module as the child "loss", so recipes can give it its
  // own numerics (numerics.overrides: - match: loss).
  Model();

  // The predictions for `batch`; split is "train", "val" or "test" (models that
  // see the whole graph pick the split's node mask from it).
  virtual Prediction predict(const data::Batch& batch, const std::string& split) = 0;
  // Scalar loss of a prediction. Default: cross-entropy over the rows whose
  // target is not -1 (mean), through the "loss" child's numerics.
  virtual Tensor loss(const Prediction& p);

  // Diagnosis of a non-finite loss: while probing, probe() remembers the first
  // module output that holds a NaN or infinity. Models call it on the output of
  // each sub-module they run (cheap: a flag test when not probing).
  void start_probe();
  // The path of the first non-finite output seen since start_probe ("" = none).
  std::string stop_probe();

  CrossEntropyLoss& loss_module() { return *loss_; }
  std::string type_name() const override { return "Model"; }

 protected:
  const Tensor& probe(const Module& m, const Tensor& y);

 private:
  std::shared_ptr<CrossEntropyLoss> loss_;
  bool probing_ = false;
  std::string first_nonfinite_;
};

// The targets "y" of a batch with one label per example, as (N) floats.
Tensor example_targets(const data::Batch& batch);
// Whether t holds a NaN or an infinity.
bool has_nonfinite(const Tensor& t);

}  // namespace emu::models
