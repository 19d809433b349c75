#include "core/batchnorm_checks.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/op_checks.h"

namespace emu {
namespace {

BatchNormShape ncs_of(const char* op, const char* what, const Tensor& t) {
  if (t.ndim() != 3)
    throw std::invalid_argument(
        fmt::format("{}: {} must be (N, C, S), got {}", op, what, shape_string(t.shape())));
  return BatchNormShape{t.dim(0), t.dim(1), t.dim(2)};
}

}  // namespace

BatchNormShape check_batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var,
                                      const Tensor& var_unbiased) {
  const char* op = "batch_norm_stats";
  const BatchNormShape d = ncs_of(op, "x", x);
  check_result(op, "mean", mean, {d.C});
  check_result(op, "var", var, {d.C});
  check_result(op, "var_unbiased", var_unbiased, {d.C});
  return d;
}

BatchNormShape check_batch_norm_normalize(const Tensor& x, const Tensor& mean, const Tensor& var,
                                          const Tensor* gamma, const Tensor* beta, const Tensor& y,
                                          const Tensor& xhat, const Tensor& invstd) {
  const char* op = "batch_norm_normalize";
  const BatchNormShape d = ncs_of(op, "x", x);
  check_shape(op, "mean", mean, {d.C});
  check_shape(op, "var", var, {d.C});
  if (gamma) check_shape(op, "gamma", *gamma, {d.C});
  if (beta) check_shape(op, "beta", *beta, {d.C});
  check_result(op, "y", y, x.shape());
  check_result(op, "xhat", xhat, x.shape());
  check_result(op, "invstd", invstd, {d.C});
  return d;
}

int64_t check_batch_norm_update_running(const Tensor& mean, const Tensor& var_unbiased,
                                        const Tensor& running_mean, const Tensor& running_var) {
  const char* op = "batch_norm_update_running";
  const int64_t C = mean.numel();
  check_shape(op, "mean", mean, {C});
  check_shape(op, "var_unbiased", var_unbiased, {C});
  check_result(op, "running_mean", running_mean, {C});
  check_result(op, "running_var", running_var, {C});
  return C;
}

BatchNormShape check_batch_norm_backward(const Tensor& gy, const Tensor& xhat, const Tensor& invstd,
                                         const Tensor* gamma, const Tensor* gx, const Tensor* ggamma,
                                         const Tensor* gbeta) {
  const char* op = "batch_norm_backward";
  const BatchNormShape d = ncs_of(op, "gy", gy);
  check_shape(op, "xhat", xhat, gy.shape());
  check_shape(op, "invstd", invstd, {d.C});
  if (gamma) check_shape(op, "gamma", *gamma, {d.C});
  if (gx) check_result(op, "gx", *gx, gy.shape());
  if (ggamma) check_result(op, "ggamma", *ggamma, {d.C});
  if (gbeta) check_result(op, "gbeta", *gbeta, {d.C});
  return d;
}

}  // namespace emu
