// Shape ops with autograd: flatten, reshape, concat, and the residual add.
//
// flatten, reshape and concat move values without arithmetic, so they round
// nothing, forward or backward: gradients pass through unchanged (a reshape of
// the incoming gradient, or its slice for each concat input). The residual add
// is arithmetic: y = R_out(a + b) with the inputs read into the activations
// format; its backward hands R_grads(gy) to both inputs.
#pragma once

#include <vector>

#include "layers/sequential.h"

namespace emu {

// x: (d0, ..., d_{n-1}) -> (d0, ..., d_{s-1}, d_s * ... * d_e, d_{e+1}, ...), s = start_dim, e = end_dim
// (negative dims count from the end). A view of x when x is contiguous, else a copy.
Tensor flatten(const Tensor& x, int start_dim = 1, int end_dim = -1);

// x -> the same elements in row-major order under `shape` (one -1 allowed).
// A view of x when x is contiguous, else a copy.
Tensor reshape(const Tensor& x, const Shape& shape);

// x -> a row-major copy of its values through the backend (no rounding, no
// autograd), for any device; x itself when it is contiguous already.
Tensor contiguous_copy(const Tensor& x);

// xs[k]: equal shapes except along `dim` -> y: their concatenation along `dim`
// (negative dim counts from the end). Always a new tensor.
Tensor concat(const std::vector<Tensor>& xs, int dim);

// a, b: the same shape (no broadcasting) -> y = R_out(a + b), one rounding of the
// exact sum; `m` gives the numerics and draw keys.
Tensor add(const Module& m, const Tensor& a, const Tensor& b);

class Flatten : public UnaryModule {
 public:
  explicit Flatten(int start_dim = 1, int end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override { return flatten(x, start_dim, end_dim); }
  std::string type_name() const override { return "Flatten"; }
  int start_dim, end_dim;
};

// Reshapes every input to `shape` (one -1 allowed, e.g. {-1, 16, 4, 4} keeps the batch).
class Reshape : public UnaryModule {
 public:
  explicit Reshape(Shape shape) : shape(std::move(shape)) {}
  Tensor forward(const Tensor& x) override { return reshape(x, shape); }
  std::string type_name() const override { return "Reshape"; }
  Shape shape;
};

// The residual add as a module, so its numerics can be set by path.
class Add : public Module {
 public:
  Tensor forward(const Tensor& a, const Tensor& b) { return add(*this, a, b); }
  std::string type_name() const override { return "Add"; }
};

}  // namespace emu
