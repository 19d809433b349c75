#include "core/loss_checks.h"

#include <fmt/format.h>

#include <stdexcept>

#include "numerics/loss_arith.h"

namespace emu {
namespace {

void check_scalar(const char* op, const Tensor& t) {
  if (t.numel() != 1) throw std::invalid_argument(fmt::format("{}: the loss must have one element", op));
}

}  // namespace

std::vector<int64_t> check_cross_entropy(const char* op, const char* rows_name, const Tensor& rows,
                                         const char* out_name, const Tensor& out, const Tensor& scalar,
                                         const Tensor& targets, int64_t ignore_index) {
  if (rows.ndim() != 2 || out.shape() != rows.shape() || !out.is_contiguous())
    throw std::invalid_argument(fmt::format("{}: {} {} -> {} {}: want (N, C) both", op, rows_name,
                                            shape_string(rows.shape()), out_name, shape_string(out.shape())));
  check_scalar(op, scalar);
  const int64_t N = rows.dim(0), C = rows.dim(1);
  if (targets.ndim() != 1 || targets.dim(0) != N)
    throw std::invalid_argument(fmt::format("{}: targets of shape {} for {} rows (want ({},))", op,
                                            shape_string(targets.shape()), N, N));
  return target_classes(op, targets.to_vector(), C, ignore_index);
}

void check_mse_forward(const Tensor& x, const Tensor& target, const Tensor& diff, const Tensor& loss) {
  if (x.shape() != target.shape() || x.shape() != diff.shape() || !diff.is_contiguous())
    throw std::invalid_argument(fmt::format("mse_forward: input {}, target {}, diff {}: want one shape",
                                            shape_string(x.shape()), shape_string(target.shape()),
                                            shape_string(diff.shape())));
  check_scalar("mse_forward", loss);
}

void check_mse_backward(const Tensor& diff, const Tensor& gloss, const Tensor& gx, const Tensor* gtarget) {
  if (diff.shape() != gx.shape() || !gx.is_contiguous() ||
      (gtarget && (gtarget->shape() != diff.shape() || !gtarget->is_contiguous())))
    throw std::invalid_argument(
        fmt::format("mse_backward: diff {} -> gx {}", shape_string(diff.shape()), shape_string(gx.shape())));
  check_scalar("mse_backward", gloss);
}

}  // namespace emu
