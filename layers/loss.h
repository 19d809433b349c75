// Losses: cross-entropy over logits with integer targets, and mean squared
// error. Each returns a 0-dimensional (one-element) tensor that backward() can
// start from. Formulas, roundings and reduction orders: backends/cpu/loss_ops.cpp
// and docs/layers_elementwise.md.
#pragma once

#include <cstdint>
#include <vector>

#include "core/module.h"

namespace emu {

struct CrossEntropyOptions {
  int64_t ignore_index = -100;   // rows with this target add nothing and are not counted
  float label_smoothing = 0.0f;  // eps in [0, 1]: target distribution (1 - eps) one_hot + eps / C
};

// logits: (N, C); targets: (N) class indices stored as floats (exact integers
// below 2^24, so they can live on the device with the logits), or ignore_index
// -> loss: () = mean over the rows not ignored of -sum_j q_j log_softmax(logits)_j
// (PyTorch's cross_entropy with reduction='mean'; all rows ignored gives NaN).
Tensor cross_entropy(const Module& m, const Tensor& logits, const Tensor& targets,
                     const CrossEntropyOptions& options = {});
// The same with targets as integers (uploaded to the logits' device).
Tensor cross_entropy(const Module& m, const Tensor& logits, const std::vector<int64_t>& targets,
                     const CrossEntropyOptions& options = {});

// The smoothed target distribution's two values, in format f:
// q_off = R_f(eps / C), q_on = R_f(R_f(1 - eps) + q_off).
struct SmoothingWeights {
  float on, off;
};
SmoothingWeights smoothing_weights(const Format& f, float label_smoothing, int64_t classes);

// x, target: the same shape -> loss: () = mean_i (x_i - target_i)^2 over all
// elements. target may require grad (its gradient is the negated one of x).
Tensor mse_loss(const Module& m, const Tensor& x, const Tensor& target);

class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(CrossEntropyOptions options = {});
  Tensor forward(const Tensor& logits, const Tensor& targets) {
    return cross_entropy(*this, logits, targets, options);
  }
  Tensor forward(const Tensor& logits, const std::vector<int64_t>& targets) {
    return cross_entropy(*this, logits, targets, options);
  }
  std::string type_name() const override { return "CrossEntropyLoss"; }

  CrossEntropyOptions options;
};

class MSELoss : public Module {
 public:
  Tensor forward(const Tensor& x, const Tensor& target) { return mse_loss(*this, x, target); }
  std::string type_name() const override { return "MSELoss"; }
};

}  // namespace emu
