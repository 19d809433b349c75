#include "layers/activation.h"

#include "core/autograd.h"
#include "layers/layer_io.h"

namespace emu {

// The policy's mode of the activation's function (relu: none, exact).
FunctionApprox activation_function(const LayerNumerics& n, Activation kind) {
  switch (kind) {
    case Activation::Relu:
      return FunctionApprox{};
    case Activation::Gelu:
      return n.function(Function::Gelu);
    case Activation::Silu:
      return n.function(Function::Silu);
    case Activation::Tanh:
      return n.function(Function::Tanh);
    case Activation::Sigmoid:
      return n.function(Function::Sigmoid);
  }
  return FunctionApprox{};
}

Tensor activation(const Module& m, Activation kind, const Tensor& x) {
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  Tensor xr = read_as(cn.activations, x.contiguous(), draw_key(m, DrawSite::ReadInput));
  Tensor y = Tensor::uninitialized(x.shape(), x.device());  // element-wise: every element written
  // The function is the policy's whatever the emulation mode (n, not cn).
  const FunctionApprox& fn = activation_function(n, kind);
  be.activation_forward(kind, fn, cn.out(), xr, y, draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));
  Tensor result = y.view(x.shape());  // its own handle: the node keeps y, not the result

  const Module* mp = &m;
  record_lambda(result, activation_name(kind), {x}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad));
    Tensor gx = Tensor::uninitialized(x.shape(), gy.device());
    be.activation_backward(kind, activation_function(n, kind), cn.grads, xr, y, g, gx,
                           draw_key(*mp, DrawSite::GradInput));
    finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
    return {gx};
  });
  return result;
}

}  // namespace emu
