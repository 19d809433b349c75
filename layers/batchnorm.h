// Batch normalisation over the channel dimension C.
//   BatchNorm1d: x (N, C) or (N, C, L); BatchNorm2d: x (N, C, H, W); y has x's shape.
// Training uses the batch statistics of each channel over (batch, spatial):
// mean and biased variance normalise, the unbiased variance feeds the running
// estimate (running = (1 - momentum) * running + momentum * batch). Evaluation
// uses the running statistics. Every sum is a sequential reduction in the acc
// format, every element-wise step is rounded to the output format (grads format
// in the backward); docs/layers_nn.md and core/backend_ops_nn.h list each step.
#pragma once

#include "core/module.h"

namespace emu {

class BatchNorm : public Module {
 public:
  Tensor forward(const Tensor& x);
  // weight = 1, bias = 0, running_mean = 0, running_var = 1, num_batches_tracked = 0 (PyTorch's reset).
  void reset_parameters() override;

  int64_t num_features;
  float eps, momentum;
  bool affine, track_running_stats;
  Tensor weight, bias;                                    // (C); undefined without affine
  Tensor running_mean, running_var, num_batches_tracked;  // (C), (C), (); undefined without tracking

 protected:
  BatchNorm(int64_t num_features, float eps, float momentum, bool affine, bool track_running_stats);
  // Throws unless x has one of the layouts this layer takes.
  virtual void check_input(const Tensor& x) const = 0;
};

class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, float eps = 1e-5f, float momentum = 0.1f, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats) {}
  std::string type_name() const override { return "BatchNorm1d"; }

 protected:
  void check_input(const Tensor& x) const override;
};

class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, float eps = 1e-5f, float momentum = 0.1f, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats) {}
  std::string type_name() const override { return "BatchNorm2d"; }

 protected:
  void check_input(const Tensor& x) const override;
};

// The op itself. x: (N, C, ...) -> y: x's shape. With batch statistics and defined
// running tensors, these are updated in place (momentum); without batch
// statistics the running tensors normalise. `m` gives the numerics, the path of
// the draw keys and the step.
Tensor batch_norm(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias,
                  Tensor running_mean, Tensor running_var, bool batch_stats, float momentum, float eps);

}  // namespace emu
