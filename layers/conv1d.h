// Conv1d: 1-D convolution (cross-correlation, as PyTorch's Conv1d), with dilation.
//   x: (N, C_in, L) -> y: (N, C_out, OL), OL = (L + 2 padding - dilation (KL - 1) - 1) / stride + 1;
//   weight: (C_out, C_in / groups, KL); bias: (C_out)
// Conv1d is Conv2d with H = KH = 1: it runs the Conv2d ops on (N, C_in, 1, L) with a 1 x KL kernel,
// so forward reduces over (in-channel of the group, kernel tap) then adds the bias, grad-input over
// (out-channel of the group, kernel tap), grad-weight over (batch, output position), each ascending
// (docs/contract.md section 4.2, as Conv2d); padding positions are zero operands. docs/layers_sequence.md.
#pragma once

#include "core/backend_types.h"
#include "core/module.h"

namespace emu {

// The Conv2d parameters of a 1-D convolution along W (H = KH = 1: stride 1, padding 0, dilation 1
// along H).
Conv2dParams conv1d_params(int stride, int padding, int dilation, int groups);

class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int kernel, int stride = 1, int padding = 0,
         int dilation = 1, int groups = 1, bool bias = true);
  Tensor forward(const Tensor& x);
  // PyTorch's default: weight and bias uniform(+-1/sqrt(fan_in)), fan_in = C_in / groups * KL.
  void reset_parameters() override;
  std::string type_name() const override { return "Conv1d"; }

  int64_t in_channels, out_channels;
  int kernel;
  Conv2dParams params;  // conv1d_params(stride, padding, dilation, groups)
  Tensor weight, bias;  // bias undefined when built without one
};

// The op itself, for layers that hold their weights elsewhere. `m` gives the numerics, the path of the
// draw keys and the step; `params` as conv1d_params gives them.
Tensor conv1d(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dParams& params);

}  // namespace emu
