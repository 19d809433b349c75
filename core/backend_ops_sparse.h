// Op family: sparse (a CSR matrix times a dense one: graph aggregation, sparse
// features). The arithmetic is written down in docs/layers_graph.md; the CPU
// reference is backends/cpu/sparse_ops.cpp.
//
// spmm:            a (R x K CSR, core/csr.h), b (K, N), bias (N) or null -> c (R, N):
//                    c[i][j] = mac_reduce(p, terms, bias[j]) over the terms
//                    (a.values[e], b[a.col_idx[e]][j]) for e = row_ptr[i] .. row_ptr[i+1)-1,
//                  i.e. the stored entries of row i in ascending column index (docs/contract.md
//                  section 4.2, "graph aggregation": neighbours in ascending source id). Only stored
//                  entries are terms: K_i = the row's stored-entry count, and chunk boundaries
//                  (chunk: C) cut every C stored entries; a stored zero is a term that mac_reduce
//                  skips (it keeps its place in the chunk count). An empty row gives R_out(+0)
//                  (or R_out(R(+0 + bias))). The bias is added inside the reduction, as gemm does.
// spmm_transposed: a (R x K CSR), b (R, N) -> c (K, N) = a^T b, defined as
//                  spmm(p, csr_transpose(a), b, null, c): output (k, j) reduces over the rows r with
//                  a stored entry (r, k), in ascending r (csr_transpose keeps that order). No bias:
//                  it is the backward product (grad of spmm's b = a^T gy).
//
// Both: c is allocated by the caller, contiguous; b may be any view; a must pass
// csr_validate and its values live on the op's device. Draws (formats with :sr):
// output o = i*N + j draws at index o * mac_site_count(Kmax, chunk) + site of key,
// with site numbered by numerics/mac.h over the row's K_i terms and Kmax the largest
// K_i of the matrix that is reduced (a for spmm, a^T for spmm_transposed): every
// row's sites fit below mac_site_count(Kmax, chunk), so no two outputs share a draw.
#pragma once

#include "core/backend_types.h"

#define EMU_OPS_SPARSE(X)                                                                                  \
  X(spmm,                                                                                                  \
    (const MacPolicy& p, const CsrMatrix& a, const Tensor& b, const Tensor* bias, Tensor& c, DrawKey key), \
    (p, a, b, bias, c, key))                                                                               \
  X(spmm_transposed, (const MacPolicy& p, const CsrMatrix& a, const Tensor& b, Tensor& c, DrawKey key),    \
    (p, a, b, c, key))
