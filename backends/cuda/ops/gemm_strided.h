// Batched products of strided operands for the tile kernel (gemm_tile.h):
// gemm (one batch) and the per-head attention products (batch n*heads + h).
//
//   A(b, row, k) = a.base[a.offset(b) + row * a.major + k * a.k]
//   B(b, k, col) = b.base[b.offset(b) + col * b.major + k * b.k]
//   output (b, row, col) at o = c.offset(b) + row * c.major + col * c.k
//   bias (optional): bias[col]
//
// with offset(b) = (b / heads) * outer + (b % heads) * inner. Every element
// exists (no padding), and the strides describe contiguous storage the caller
// made (Tensor::contiguous), so a view's layout never reaches the kernel.
#pragma once

#include <cstdint>

#include "backends/cuda/ops/target.h"
#include "numerics/hd.h"

namespace emu::EMU_CUDA_NS::tile {

struct Strides {
  const float* base = nullptr;   // null for the output's index map
  int64_t outer = 0, inner = 0;  // per batch index: b / heads, b % heads
  int64_t major = 0, k = 0;      // per row (or column) and per k (for the output: per row and per column)
  EMU_HD int64_t offset(int64_t b, int64_t heads) const { return (b / heads) * outer + (b % heads) * inner; }
};

struct StridedProduct {
  Strides a, b, c;
  int64_t heads = 1;
  const float* bias_base = nullptr;  // (cols) or null

  static constexpr bool kSwapped = false;  // terms are mac_term(A, B), as the CPU's mac_gemm
  using RowCursor = const float*;          // A's row
  using ColCursor = const float*;          // B's column
  EMU_HD RowCursor a_row(int64_t bt, int64_t row) const {
    return offset_or_null(a.base, a.offset(bt, heads) + row * a.major);
  }
  EMU_HD float a_at(RowCursor r, int64_t k) const { return r[k * a.k]; }
  EMU_HD ColCursor b_col(int64_t bt, int64_t col) const {
    return offset_or_null(b.base, b.offset(bt, heads) + col * b.major);
  }
  EMU_HD float b_at(ColCursor c0, int64_t k) const { return c0[k * b.k]; }
  EMU_HD uint64_t out_index(int64_t bt, int64_t row, int64_t col) const {
    return static_cast<uint64_t>(c.offset(bt, heads) + row * c.major + col * c.k);
  }
  EMU_HD const float* bias(int64_t, int64_t, int64_t col) const {
    return bias_base ? bias_base + col : nullptr;
  }
};

}  // namespace emu::EMU_CUDA_NS::tile
