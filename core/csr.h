// CsrMatrix: a sparse matrix in compressed-sparse-row form, for graph
// adjacency and sparse features (Cora's bag-of-words). Column indices are
// ascending within each row, which is the canonical order of every sparse
// reduction (docs/contract.md section 4.2: ascending column index per row).
//
// The helpers below build, check and transform matrices on the host: values on
// another device are downloaded, and results go back to the device of their
// input (csr_from_coo builds on the CPU); docs/layers_graph.md says what each
// computes. None of them rounds into an emulated format: coefficients are
// binary32 constants that layers then read through their policy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace emu {

struct CsrMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int64_t> row_ptr;  // rows + 1 offsets into col_idx / values
  std::vector<int32_t> col_idx;  // nnz column indices, ascending within each row
  Tensor values;                 // (nnz) float32, on the matrix's device

  int64_t nnz() const { return static_cast<int64_t>(col_idx.size()); }
};

// Throws std::invalid_argument, prefixed with `what`, unless: rows, cols >= 0,
// cols <= 2^31 - 1; row_ptr has rows + 1 entries, starts at 0, never decreases
// and ends at nnz; every column index is in [0, cols) and strictly ascending
// within its row (no duplicates); values is a defined 1-D tensor of nnz elements.
void csr_validate(const CsrMatrix& a, const std::string& what = "CsrMatrix");

// What csr_from_coo does with several triples at one (row, col).
enum class CooDuplicates {
  Sum,    // one entry: the binary32 sum of the values in input order (fp32 adds, left to right)
  Max,    // one entry: the largest value (a NaN among them gives NaN); e.g. 0/1 edge lists with repeats
  Error,  // std::invalid_argument naming the first repeated (row, col)
};

// A (rows x cols) CSR matrix from COO triples (row[e], col[e], values[e]);
// `values` empty means every value is 1. Triples may come in any order: they
// are sorted by (row, col) with a stable sort, so duplicates meet in input
// order. Indices out of range or mismatched lengths throw std::invalid_argument.
CsrMatrix csr_from_coo(int64_t rows, int64_t cols, const std::vector<int64_t>& row,
                       const std::vector<int64_t>& col, const std::vector<float>& values = {},
                       CooDuplicates duplicates = CooDuplicates::Sum);

// The (cols x rows) transpose. Row k of the result holds the entries (r, k) of
// `a` in ascending r, so its column order is again ascending. If `source` is
// given it receives, for each entry of the result, the index of that entry in
// `a` (to carry per-entry data such as rounded values across).
CsrMatrix csr_transpose(const CsrMatrix& a, std::vector<int64_t>* source = nullptr);
// csr_transpose without the csr_validate call, for callers that have just validated `a`.
CsrMatrix csr_transpose_unchecked(const CsrMatrix& a, std::vector<int64_t>* source = nullptr);

// The same structure with other values (nnz elements, any device): shares
// nothing with `a` but copies its index arrays.
CsrMatrix csr_with_values(const CsrMatrix& a, const Tensor& values);

// A + fill * I for a square A: a stored diagonal entry v becomes fp32(v + fill)
// (so A + I literally, unlike PyG's add_remaining_self_loops, which keeps v);
// a missing one is inserted, with value fill, in its column order.
CsrMatrix csr_add_self_loops(const CsrMatrix& a, float fill = 1.0f);

// The GCN propagation matrix of Kipf & Welling, D^-1/2 (A + I) D^-1/2, for a
// square A whose row i lists the sources j aggregated into node i:
//   S = csr_add_self_loops(A, 1)
//   deg_i  = sum of row i of S in ascending column order, binary32 adds (the
//            exact count for a 0/1 matrix below 2^24 entries per row)
//   dinv_i = fn_rsqrt(deg_i) (numerics/functions.h: correctly rounded, no libm);
//            0 where deg_i == 0 (as PyG masks 1/sqrt(0))
//   coef   = fp32::mul(fp32::mul(dinv_j, s_ij), dinv_i)   (PyG's order: source, weight, target)
// Every coefficient is a binary32 constant; the layer reads it in its policy's
// `weights` format (layers/gcn.h). For a symmetric A the result is symmetric.
CsrMatrix gcn_normalize(const CsrMatrix& a);

// Dense (rows, cols) tensor of a matrix (zeros elsewhere) on its values' device,
// and the CSR matrix of a 2-D tensor's nonzero elements (x != 0; NaNs are
// stored) with values on x's device.
Tensor csr_to_dense(const CsrMatrix& a);
CsrMatrix csr_from_dense(const Tensor& x);

}  // namespace emu
