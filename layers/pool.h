// Pooling layers over (N, C, H, W) inputs.
//   MaxPool2d(kernel, stride = kernel, padding = 0): max of each window, ties to the
//     first index in row-major window order; gradient to that index.
//   AvgPool2d(kernel, stride = kernel, padding = 0): window sum in the acc format
//     (row-major window order) divided by KH*KW (PyTorch's count_include_pad).
//   AdaptiveAvgPool2d(output): PyTorch's windows start = floor(o*H/OH),
//     end = ceil((o+1)*H/OH), each divided by its own size.
// Output size (no ceil mode): OH = (H + 2 pad_h - KH) / stride_h + 1. Padding is at
// most half the kernel, as in PyTorch. docs/layers_nn.md has the arithmetic.
#pragma once

#include "core/backend_types.h"
#include "core/module.h"
#include "layers/conv2d.h"  // Size2

namespace emu {

class MaxPool2d : public Module {
 public:
  // stride 0: equal to the kernel (PyTorch's default).
  explicit MaxPool2d(Size2 kernel, Size2 stride = 0, Size2 padding = 0);
  Tensor forward(const Tensor& x);
  std::string type_name() const override { return "MaxPool2d"; }
  Pool2dParams params;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Size2 kernel, Size2 stride = 0, Size2 padding = 0);
  Tensor forward(const Tensor& x);
  std::string type_name() const override { return "AvgPool2d"; }
  Pool2dParams params;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Size2 output);
  Tensor forward(const Tensor& x);
  std::string type_name() const override { return "AdaptiveAvgPool2d"; }
  Size2 output;
};

// The ops themselves; `m` gives the numerics, the path of the draw keys and the step.
Tensor max_pool2d(const Module& m, const Tensor& x, const Pool2dParams& params);
Tensor avg_pool2d(const Module& m, const Tensor& x, const Pool2dParams& params);
Tensor adaptive_avg_pool2d(const Module& m, const Tensor& x, Size2 output);

}  // namespace emu
