#include "core/layernorm_checks.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/op_checks.h"

namespace emu {
namespace {

LayerNormRows rows_of(const char* op, const char* what, const Tensor& t) {
  if (t.ndim() != 2)
    throw std::invalid_argument(
        fmt::format("{}: {} must be (rows, D), got {}", op, what, shape_string(t.shape())));
  return LayerNormRows{t.dim(0), t.dim(1)};
}

}  // namespace

LayerNormRows check_layer_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta,
                                       const Tensor& y, const Tensor& xhat, const Tensor& invstd) {
  const char* op = "layer_norm_forward";
  const LayerNormRows d = rows_of(op, "x", x);
  if (gamma) check_shape(op, "gamma", *gamma, {d.D});
  if (beta) check_shape(op, "beta", *beta, {d.D});
  check_result(op, "y", y, x.shape());
  check_result(op, "xhat", xhat, x.shape());
  check_result(op, "invstd", invstd, {d.R});
  return d;
}

LayerNormRows check_layer_norm_backward(const Tensor& gy, const Tensor& xhat, const Tensor& invstd,
                                        const Tensor* gamma, const Tensor* gx, const Tensor* ggamma,
                                        const Tensor* gbeta) {
  const char* op = "layer_norm_backward";
  const LayerNormRows d = rows_of(op, "gy", gy);
  check_shape(op, "xhat", xhat, gy.shape());
  check_shape(op, "invstd", invstd, {d.R});
  if (gamma) check_shape(op, "gamma", *gamma, {d.D});
  if (gx) check_result(op, "gx", *gx, gy.shape());
  if (ggamma) check_result(op, "ggamma", *ggamma, {d.D});
  if (gbeta) check_result(op, "gbeta", *gbeta, {d.D});
  return d;
}

}  // namespace emu
