// The argument checks of the sparse products (EMU_OPS_SPARSE, core/backend_ops_sparse.h),
// one definition for every backend, so a bad call fails with the same message
// on the CPU and on a device, before any work: the CSR structure
// (csr_validate, core/csr.h) and the operand shapes. Each check throws
// std::invalid_argument naming the op and the shapes.
#pragma once

#include "core/csr.h"
#include "core/tensor.h"

namespace emu {

// a (R x K CSR), b (K, N), bias (N) or null -> c (R, N), contiguous
void check_spmm(const CsrMatrix& a, const Tensor& b, const Tensor* bias, const Tensor& c);

// a (R x K CSR), b (R, N) -> c (K, N) = a^T b, contiguous
void check_spmm_transposed(const CsrMatrix& a, const Tensor& b, const Tensor& c);

}  // namespace emu
