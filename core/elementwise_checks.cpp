#include "core/elementwise_checks.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/op_checks.h"

namespace emu {
namespace {

void check_output(const char* op, const Tensor& in, const Tensor& out) {
  check_same_shape(op, in, out);
  if (!out.is_contiguous()) throw std::invalid_argument(fmt::format("{}: the output must be contiguous", op));
}

void check_rows(const char* op, const Tensor& a, const Tensor& b) {
  if (a.ndim() != 2 || a.shape() != b.shape())
    throw std::invalid_argument(fmt::format("{}: expected two (rows, C) tensors, got {} and {}", op,
                                            shape_string(a.shape()), shape_string(b.shape())));
}

}  // namespace

void check_activation_forward(const Tensor& x, const Tensor& y) { check_output("activation_forward", x, y); }

void check_activation_backward(const Tensor& x, const Tensor& y, const Tensor& gy, const Tensor& gx) {
  check_same_shape("activation_backward", x, y);
  check_same_shape("activation_backward", x, gy);
  check_output("activation_backward", x, gx);
}

void check_elementwise_add(const Tensor& a, const Tensor& b, const Tensor& y) {
  check_same_shape("elementwise_add", a, b);
  check_output("elementwise_add", a, y);
}

void check_dropout(float p, const Tensor& x, const Tensor& y) {
  if (x.shape() != y.shape() || !y.is_contiguous())
    throw std::invalid_argument(fmt::format("dropout: {} into {} (contiguous output required)",
                                            shape_string(x.shape()), shape_string(y.shape())));
  if (!(p >= 0.0f && p <= 1.0f))
    throw std::invalid_argument(fmt::format("dropout: p = {} is not in [0, 1]", p));
}

void check_softmax_forward(const Tensor& x, const Tensor& y) {
  check_rows("softmax_forward", x, y);
  if (!y.is_contiguous()) throw std::invalid_argument("softmax_forward: the output must be contiguous");
}

void check_softmax_backward(const Tensor& y, const Tensor& gy, const Tensor& gx) {
  check_rows("softmax_backward", y, gy);
  check_rows("softmax_backward", y, gx);
  if (!gx.is_contiguous()) throw std::invalid_argument("softmax_backward: the output must be contiguous");
}

}  // namespace emu
