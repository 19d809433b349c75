// Products of a constant sparse matrix (CSR, core/csr.h) and a dense tensor,
// recorded for autograd: the aggregation step of graph layers and linear maps
// of sparse features. The sparse operand gets no gradient (it is data: an
// adjacency or bag-of-words features). Arithmetic: the spmm / spmm_transposed
// ops of core/backend_ops_sparse.h; docs/layers_graph.md has every step.
#pragma once

#include <cstdint>
#include <memory>

#include "core/backend_types.h"
#include "core/csr.h"
#include "core/module.h"

namespace emu {

// Which policy formats read the two operands (docs/contract.md section 5.1).
enum class SparseOperands : uint8_t {
  // a is a constant of the layer (a normalised adjacency): its values are read in
  // `weights`, like BatchNorm's running statistics in evaluation; b is the
  // layer's input, read in `activations`. b's gradient is a grad-input.
  ConstantTimesInput,
  // a is the layer's input (sparse features): values read in `activations`; b is
  // a parameter, read in `weights`. b's gradient is a grad-weight.
  InputTimesParameter,
};

// y = a b (+ bias): a (R x K CSR), b (K, N), bias (N) or undefined -> y (R, N).
// Forward: spmm, one reduction per output over the row's stored entries in
// ascending column index, the bias (read in `weights`) added inside it.
// Backward: b gets spmm_transposed(a as read, gy as read): a^T gy, reduced over
// a's rows in ascending order; bias gets the sum of gy over the rows (as Linear).
// `stage` offsets every draw stream of `m` (nn_stage_key) so that a layer with
// several products keeps their :sr draws apart (GCNConv: 0 transform, 1 aggregation).
Tensor sparse_matmul(const Module& m, std::shared_ptr<const CsrMatrix> a, const Tensor& b,
                     const Tensor& bias = Tensor(),
                     SparseOperands operands = SparseOperands::ConstantTimesInput, uint32_t stage = 0);
Tensor sparse_matmul(const Module& m, const CsrMatrix& a, const Tensor& b, const Tensor& bias = Tensor(),
                     SparseOperands operands = SparseOperands::ConstantTimesInput, uint32_t stage = 0);

// linear() with sparse features: y = x W^T + b, x (R x in CSR; values read in
// `activations`), weight (out, in) and bias (out) read in `weights` -> y (R, out).
// Forward reduces over the row's stored features in ascending index; the weight
// gradient W^T's row f = sum over the rows r storing feature f, ascending r, of
// x[r][f] gy[r] (spmm_transposed), i.e. Linear's grad-weight restricted to the
// nonzero inputs.
Tensor sparse_linear(const Module& m, std::shared_ptr<const CsrMatrix> x, const Tensor& weight,
                     const Tensor& bias = Tensor(), uint32_t stage = 0);

// The matrix with its values read into `f` (element i drawing at index i of key):
// `a` itself when f is plain fp32, else a copy sharing no storage.
std::shared_ptr<const CsrMatrix> read_csr(const Format& f, std::shared_ptr<const CsrMatrix> a, DrawKey key);

}  // namespace emu
