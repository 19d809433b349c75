// How a tensor's elements group into the rows of the reductions that read it
// (docs/contract.md sections 5.2 and 8.2): block formats share metadata over blocks of
// B consecutive elements of a row, and N:M masks keep N of every M consecutive
// elements of a row, where a row is the run of operands one output element
// reduces over.
//
// The tensor (row-major, contiguous) is viewed as [outer, len, inner]: there are
// outer * inner rows, row (o, i) holds the elements o*len*inner + k*inner + i
// for k = 0 .. len-1, and blocks/groups run along k. Examples:
//   Linear weight [out, in]              -> {out, in, 1}
//   Conv2d weight [O, C, kh, kw]         -> {O, C*kh*kw, 1}
//   Linear input [N, in]                 -> {N, in, 1}
//   Conv2d input [N, C, H, W] (channels) -> {N, C, H*W}
//   gradient [N, out] read by grad-weight (reduction over the batch) -> {1, N, out}
#pragma once

#include <cstdint>

#include "numerics/hd.h"

namespace emu {

struct ReadLayout {
  int64_t outer = 1;
  int64_t len = 0;  // elements per row; 0 = not set (use rows_along_last_dim)
  int64_t inner = 1;

  // Host+device (EMU_HD): kernels of N:M masks and block formats walk rows with these.
  EMU_HD int64_t rows() const { return outer * inner; }
  EMU_HD int64_t numel() const { return outer * len * inner; }
  // The flat index of element k of row r (r = o * inner + i).
  EMU_HD int64_t index(int64_t r, int64_t k) const {
    return (r / inner) * len * inner + k * inner + (r % inner);
  }
};

// Rows along the last dimension: `numel` elements in rows of `last_dim`.
inline ReadLayout rows_along_last_dim(int64_t numel, int64_t last_dim) {
  ReadLayout l;
  l.len = last_dim > 0 ? last_dim : 1;
  l.outer = numel / l.len;
  return l;
}

}  // namespace emu
