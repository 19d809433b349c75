// Optimizers over named parameters: FP32 master weights by default; set an
// update format to emulate the update arithmetic itself (every element-wise
// step of the update rounded to it).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "numerics/format.h"

namespace emu {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Optimizer {
 public:
  explicit Optimizer(NamedTensors params);
  virtual ~Optimizer() = default;
  // One update of every parameter that has a gradient.
  virtual void step() = 0;
  void zero_grad();

  float lr() const { return lr_; }
  void set_lr(float lr) { lr_ = lr; }
  void set_update_format(const Format& f) { update_format_ = f; }
  const Format& update_format() const { return update_format_; }
  int64_t steps() const { return steps_; }

  // Optimizer state (momentum buffers, moments, step count) by parameter name,
  // for checkpoints: "<param>.<buffer>". Buffers live on their parameter's device
  // (made there, and moved there at the next step after Module::to); counters are
  // host values, handed out as CPU scalars. load_state_dict copies from any device.
  virtual std::map<std::string, Tensor> state_dict() const = 0;
  virtual void load_state_dict(const std::map<std::string, Tensor>& state) = 0;

 protected:
  NamedTensors params_;
  float lr_ = 0.01f;
  Format update_format_;
  int64_t steps_ = 0;
};

// Scales all gradients by max_norm / (norm + 1e-6) when their global L2 norm
// exceeds max_norm. The norm is the square root of the sum of squares taken in
// binary64 in parameter order, then element order (deterministic), by the backend
// op sum_squares on each gradient's device; returns it.
double clip_grad_norm(const NamedTensors& params, double max_norm, const Format& grads_format = Format());

}  // namespace emu
