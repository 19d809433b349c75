// Conv2d: 2-D convolution (cross-correlation, as PyTorch's Conv2d).
//   x: (N, C_in, H, W) -> y: (N, C_out, OH, OW), OH = (H + 2 pad_h - dil_h (KH - 1) - 1) / stride_h + 1;
//   weight: (C_out, C_in / groups, KH, KW); bias: (C_out). Dilation is 1 unless `params` sets it.
// Forward reduces over (in-channel, kernel row, kernel column), grad-input over
// (out-channel, kernel row, kernel column), grad-weight over (batch, output row,
// output column), each ascending (docs/contract.md section 4.2); padding positions are
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
  Conv2dParams params;  // stride, padding, dilation, groups
  Tensor weight, bias;  // bias undefined when built without one
};

// The op itself, for layers that hold their weights elsewhere. `m` gives the
// numerics, the path of the draw keys and the step.
Tensor conv2d(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dParams& params);

// --- shared with Conv1d (layers/conv1d.h), which is this layer with H = KH = 1 ---

// rank 4: conv2d of x (N, C_in, H, W) by weight (C_out, C_in/G, KH, KW) -> y (N, C_out, OH, OW);
// rank 3: x (N, C_in, L), weight (C_out, C_in/G, KL) -> y (N, C_out, OL), run as (N, C_in, 1, L) and
// (C_out, C_in/G, 1, KL) (the H fields of params stay at stride 1, padding 0, dilation 1).
// `op` names the autograd node ("conv2d", "conv1d").
Tensor convolution(const char* op, int64_t rank, const Module& m, const Tensor& x, const Tensor& weight,
                   const Tensor& bias, const Conv2dParams& params);

// Throws std::invalid_argument naming `layer` ("Conv1d(4, 6, kernel 3, ...)") unless the channel
// counts, kernel sizes, strides, dilations and groups are positive, the padding is >= 0 and the
// groups divide both channel counts.
void check_conv_arguments(const std::string& layer, int64_t in_channels, int64_t out_channels, int kernel_h,
                          int kernel_w, const Conv2dParams& params);

// PyTorch's default initialisation: weight and bias (when defined) uniform(+-1/sqrt(fan_in)),
// fan_in = C_in / groups * KH * KW, the weight's elements per output channel.
void reset_conv_parameters(const Module& m, Tensor& weight, Tensor& bias);

}  // namespace emu
