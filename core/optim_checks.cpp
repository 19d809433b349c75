#include "core/optim_checks.h"

#include <fmt/format.h>

#include <stdexcept>

namespace emu {
namespace {

void check_same(const char* op, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || !a.is_contiguous() || !b.is_contiguous())
    throw std::invalid_argument(fmt::format("{}: tensors of shape {} and {} (both contiguous) expected", op,
                                            shape_string(a.shape()), shape_string(b.shape())));
}

}  // namespace

void check_sgd_update(bool momentum, const Tensor& param, const Tensor& grad, const Tensor& buf) {
  check_same("sgd_update", param, grad);
  if (momentum) check_same("sgd_update", param, buf);
}

void check_adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  check_same("adam_update", param, grad);
  check_same("adam_update", param, m);
  check_same("adam_update", param, v);
}

void check_scale(const Tensor& x) {
  if (!x.is_contiguous()) throw std::invalid_argument("scale: contiguous tensor expected");
}

}  // namespace emu
