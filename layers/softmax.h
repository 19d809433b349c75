// Softmax and LogSoftmax over the last dimension.
//   x: (..., C) -> y: (..., C)
// Each row: max subtraction, exp rounded to the out format, the sum as a
// sequential reduction in the acc format (ascending index), then a correctly
// rounded division (softmax) or a subtraction of the rounded log of the sum
// (log-softmax). The exact steps, and the backward formulas, are in
// backends/cpu/softmax_ops.cpp and docs/layers_elementwise.md.
#pragma once

#include "layers/sequential.h"

namespace emu {

// The ops themselves; `m` gives the numerics, the path of the draw keys and the step.
Tensor softmax(const Module& m, const Tensor& x);
Tensor log_softmax(const Module& m, const Tensor& x);

class Softmax : public UnaryModule {
 public:
  Tensor forward(const Tensor& x) override { return softmax(*this, x); }
  std::string type_name() const override { return "Softmax"; }
};

class LogSoftmax : public UnaryModule {
 public:
  Tensor forward(const Tensor& x) override { return log_softmax(*this, x); }
  std::string type_name() const override { return "LogSoftmax"; }
};

}  // namespace emu
