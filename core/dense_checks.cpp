#include "core/dense_checks.h"

#include <fmt/format.h>

#include <stdexcept>

namespace emu {

void check_quantize(const Tensor& x, const Tensor& y) {
  if (x.shape() != y.shape())
    throw std::invalid_argument(
        fmt::format("quantize: {} into {}", shape_string(x.shape()), shape_string(y.shape())));
}

void check_gemm(const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor& c) {
  if (a.ndim() != 2 || b.ndim() != 2 || c.ndim() != 2 || a.dim(1) != b.dim(0) || c.dim(0) != a.dim(0) ||
      c.dim(1) != b.dim(1) || (bias && bias->numel() != b.dim(1)))
    throw std::invalid_argument(fmt::format("gemm: a {} x b {} -> c {}{}", shape_string(a.shape()),
                                            shape_string(b.shape()), shape_string(c.shape()),
                                            bias ? " with bias " + shape_string(bias->shape()) : ""));
  if (!c.is_contiguous()) throw std::invalid_argument("gemm: c must be contiguous");
}

}  // namespace emu
