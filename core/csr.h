// CsrMatrix: a sparse matrix in compressed-sparse-row form, for graph
// adjacency and sparse features (Cora's bag-of-words). Column indices are
// ascending within each row, which is the canonical order of every sparse
// reduction (NUMERICS.md section 4: ascending column index per row).
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

}  // namespace emu
