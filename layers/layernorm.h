// Layer normalisation over the last dimension (PyTorch's LayerNorm with one
// normalized dimension, Keras' LayerNormalization(axis=-1)).
//   x: (..., D) -> y: x's shape; weight (gamma), bias (beta): (D)
// Each row of D values: mean and biased variance as sequential reductions in
// the acc format, 1/sqrt through fn_rsqrt, every element-wise step rounded to
// the output format (grads format in the backward). The steps, in order, are
// in core/backend_ops_attention.h and docs/layers_attention.md.
#pragma once

#include "layers/sequential.h"

namespace emu {

// The op itself. x: (..., D); weight, bias: (D) or undefined (no scale / no
// shift). `m` gives the numerics, the path of the draw keys and the step.
Tensor layer_norm(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias, float eps);

class LayerNorm : public UnaryModule {
 public:
  // eps: 1e-5 as PyTorch (Keras uses 1e-3; its Transformer examples 1e-6).
  explicit LayerNorm(int64_t normalized_shape, float eps = 1e-5f, bool elementwise_affine = true,
                     bool bias = true);
  Tensor forward(const Tensor& x) override { return layer_norm(*this, x, weight, bias, eps); }
  void reset_parameters() override;  // weight = 1, bias = 0
  std::string type_name() const override { return "LayerNorm"; }

  int64_t normalized_shape;
  float eps;
  Tensor weight, bias;  // (D); undefined without elementwise_affine (bias also without bias)
};

}  // namespace emu
