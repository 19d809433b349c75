// Activations: y = R_out(f(x)) element-wise, with f the project's own binary32
// function (numerics/functions.h), or its piecewise-linear approximation when
// the policy's functions.<name> is pwl (numerics/pwl.h; the backward is then
// the derivative of the approximation). x: any shape -> y: the same shape.
// Backward formulas (rounded into the grads format) are in
// core/backend_ops_elementwise.h (activation_grad) and docs/layers_elementwise.md.
#pragma once

#include "core/backend.h"
#include "layers/sequential.h"
#include "numerics/activations.h"

namespace emu {

// The function mode of the policy for `kind` (relu: exact; numerics/pwl.h).
FunctionApprox activation_function(const LayerNumerics& n, Activation kind);

// The op itself; `m` gives the numerics, the path of the draw keys and the step.
Tensor activation(const Module& m, Activation kind, const Tensor& x);

class ActivationLayer : public UnaryModule {
 public:
  explicit ActivationLayer(Activation kind) : kind_(kind) {}
  Tensor forward(const Tensor& x) override { return activation(*this, kind_, x); }
  Activation kind() const { return kind_; }

 private:
  Activation kind_;
};

class ReLU : public ActivationLayer {
 public:
  ReLU() : ActivationLayer(Activation::Relu) {}
  std::string type_name() const override { return "ReLU"; }
};

// The erf form, x Phi(x) (PyTorch's GELU(approximate='none')).
class GELU : public ActivationLayer {
 public:
  GELU() : ActivationLayer(Activation::Gelu) {}
  std::string type_name() const override { return "GELU"; }
};

class SiLU : public ActivationLayer {
 public:
  SiLU() : ActivationLayer(Activation::Silu) {}
  std::string type_name() const override { return "SiLU"; }
};

class Tanh : public ActivationLayer {
 public:
  Tanh() : ActivationLayer(Activation::Tanh) {}
  std::string type_name() const override { return "Tanh"; }
};

class Sigmoid : public ActivationLayer {
 public:
  Sigmoid() : ActivationLayer(Activation::Sigmoid) {}
  std::string type_name() const override { return "Sigmoid"; }
};

}  // namespace emu
