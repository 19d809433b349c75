// Op family: sparsity (N:M masks, docs/contract.md section 5.2; docs/sparsity.md). The
// CPU reference is backends/cpu/sparsity_ops.cpp.
//
// nm_mask:    s (any shape, numel = p.layout.numel()) -> mask (same shape, contiguous):
//               mask[i] = 1.0f where element i is kept, 0.0f where it is dropped.
//             Rows: p.layout views the flat tensor as [outer, len, inner]; row r holds the
//             elements p.layout.index(r, k), k = 0 .. len-1 (numerics/read_layout.h). Groups:
//             k in [g*M, min((g+1)*M, len)), M = p.m. In each group the element j is kept iff
//             fewer than N = p.n elements of the group outrank it, where a outranks b iff
//             score(a) > score(b), or score(a) == score(b) and a's k is smaller (ties to the lower
//             index). So a group keeps exactly min(N, its size) elements; a group of <= N keeps all.
//             Scores (an order on 64-bit keys, the same integers on every backend):
//               Magnitude: |s[i]| as a float; -0 == +0; NaN outranks every number (NaN weights are
//                          kept, so they stay visible instead of being masked away);
//               Given:     s[i] itself (user scores computed on the host): -0 == +0, NaN highest;
//               Random:    philox_draw(key.seed, key.stream, i) as an unsigned 32-bit integer, i the
//                          flat element index (s only gives the shape; no rounding draws).
//             Integer comparisons only: no arithmetic, nothing to round.
// apply_mask: x, mask (same numel, any views) -> y (same shape, contiguous; y may be x):
//               y[i] = mask[i] != 0 ? x[i] : +0.0f (a select, not a product: a dropped NaN or
//               Inf becomes +0, a kept -0 stays -0).
#pragma once

#include <cstdint>

#include "core/backend_types.h"
#include "numerics/read_layout.h"

namespace emu {

enum class NmScoreSource : uint8_t { Magnitude, Random, Given };

// POD, device-friendly: passed by value to a kernel as is.
struct NmParams {
  int32_t n = 2, m = 4;
  NmScoreSource score = NmScoreSource::Magnitude;
  ReadLayout layout;
};

}  // namespace emu

#define EMU_OPS_SPARSITY(X)                                                                      \
  X(nm_mask, (const NmParams& p, const Tensor& s, Tensor& mask, DrawKey key), (p, s, mask, key)) \
  X(apply_mask, (const Tensor& x, const Tensor& mask, Tensor& y), (x, mask, y))
