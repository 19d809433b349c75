#include "core/sparse_checks.h"

#include <fmt/format.h>

#include <stdexcept>

namespace emu {

void check_spmm(const CsrMatrix& a, const Tensor& b, const Tensor* bias, const Tensor& c) {
  csr_validate(a, "spmm: a");
  if (b.ndim() != 2 || b.dim(0) != a.cols || c.ndim() != 2 || c.dim(0) != a.rows || c.dim(1) != b.dim(1) ||
      (bias && (bias->ndim() != 1 || bias->numel() != b.dim(1))))
    throw std::invalid_argument(fmt::format("spmm: a {} x {} (CSR) x b {} -> c {}{}", a.rows, a.cols,
                                            shape_string(b.shape()), shape_string(c.shape()),
                                            bias ? " with bias " + shape_string(bias->shape()) : ""));
  if (!c.is_contiguous()) throw std::invalid_argument("spmm: c must be contiguous");
}

void check_spmm_transposed(const CsrMatrix& a, const Tensor& b, const Tensor& c) {
  csr_validate(a, "spmm_transposed: a");
  if (b.ndim() != 2 || b.dim(0) != a.rows || c.ndim() != 2 || c.dim(0) != a.cols || c.dim(1) != b.dim(1))
    throw std::invalid_argument(fmt::format("spmm_transposed: a^T with a {} x {} (CSR) x b {} -> c {}",
                                            a.rows, a.cols, shape_string(b.shape()),
                                            shape_string(c.shape())));
  if (!c.is_contiguous()) throw std::invalid_argument("spmm_transposed: c must be contiguous");
}

}  // namespace emu
