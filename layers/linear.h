// Linear: y = x W^T + b.
//   x: (..., in_features) -> y: (..., out_features); weight: (out, in); bias: (out)
// Forward reduces over the in-feature k, grad-input over the out-feature, grad-weight
// over the batch rows (all leading dims flattened), each in ascending order.
#pragma once

#include "core/module.h"

namespace emu {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x);
  void reset_parameters() override;  // PyTorch's default: uniform(+-1/sqrt(in))
  std::string type_name() const override { return "Linear"; }

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when built without one
};

// The op itself, for layers that hold their weights elsewhere (attention, RNNs).
// `m` gives the numerics, the path of the draw keys and the step.
Tensor linear(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace emu
