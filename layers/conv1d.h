// Conv1d: 1-D convolution (cross-correlation, as PyTorch's Conv1d), with dilation.
//   x: (N, C_in, L) -> y: (N, C_out, OL), OL = (L + 2 padding - dilation (KL - 1) - 1) / stride + 1;
//   weight: (C_out, C_in / groups, KL); bias: (C_out)
// Forward reduces over (in-channel of the group, kernel tap) then adds the bias, grad-input over
// (out-channel of the group, kernel tap), grad-weight over (batch, output position), each ascending
// (NUMERICS.md section 4, as Conv2d); padding positions are zero operands. docs/layers_sequence.md.
#pragma once

#include "core/backend_ops_sequence.h"  // Conv1dParams
#include "core/module.h"

namespace emu {

class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int kernel, int stride = 1, int padding = 0, int dilation = 1,
         int groups = 1, bool bias = true);
  Tensor forward(const Tensor& x);
  // PyTorch's default: weight and bias uniform(+-1/sqrt(fan_in)), fan_in = C_in / groups * KL.
  void reset_parameters() override;
  std::string type_name() const override { return "Conv1d"; }

  int64_t in_channels, out_channels;
  int kernel;
  Conv1dParams params;  // stride, padding, dilation, groups
  Tensor weight, bias;  // bias undefined when built without one
};

// The op itself, for layers that hold their weights elsewhere. `m` gives the numerics, the path of the
// draw keys and the step.
Tensor conv1d(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dParams& params);

}  // namespace emu
