// Conv2d: 2-D convolution (cross-correlation, as PyTorch's Conv2d).
//   x: (N, C_in, H, W) -> y: (N, C_out, OH, OW), OH = (H + 2 pad_h - KH) / stride_h + 1;
//   weight: (C_out, C_in / groups, KH, KW); bias: (C_out)
// Forward reduces over (in-channel, kernel row, kernel column), grad-input over
// (out-channel, kernel row, kernel column), grad-weight over (batch, output row,
// output column), each ascending (NUMERICS.md section 4); padding positions are
// zero operands. docs/layers_nn.md has the details.
#pragma once

#include "core/backend_types.h"
#include "core/module.h"

namespace emu {

// A (height, width) pair: Size2(3) is 3x3, Size2(3, 5) or {3, 5} is 3x5.
struct Size2 {
  int h = 1, w = 1;
  Size2(int v) : h(v), w(v) {}  // NOLINT: implicit on purpose, as PyTorch's int-or-pair arguments
  Size2(int h_, int w_) : h(h_), w(w_) {}
};

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel, Size2 stride = 1, Size2 padding = 0,
         int groups = 1, bool bias = true);
  Tensor forward(const Tensor& x);
  // PyTorch's default: weight and bias uniform(+-1/sqrt(fan_in)), fan_in = C_in / groups * KH * KW.
  void reset_parameters() override;
  std::string type_name() const override { return "Conv2d"; }

  int64_t in_channels, out_channels;
  Size2 kernel;
  Conv2dParams params;  // stride, padding, groups
  Tensor weight, bias;  // bias undefined when built without one
};

// The op itself, for layers that hold their weights elsewhere. `m` gives the
// numerics, the path of the draw keys and the step.
Tensor conv2d(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params);

}  // namespace emu
