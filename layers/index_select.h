// index_select and picking one step per sequence, with autograd.
//   index_select(m, x, dim, index): x (d_0, ..., d_dim = S, ..., d_{n-1}), index (P) -> y: x's shape with
//     d_dim = P, y[..., p, ...] = x[..., index[p], ...]
//   gather_rows(m, x, positions, time_dim): x (N, T, ...) with time_dim 1 or (T, N, ...) with time_dim 0,
//     positions (N) -> y (N, ...): y[n] = x[n, positions[n]] (time_dim 1) or x[positions[n], n] (time_dim 0)
//   last_valid_step(m, x, lengths, time_dim): gather_rows at positions = lengths - 1 (the last valid
//     step of each variable-length sequence; lengths in [1, T]).
// Index tensors are float tensors of exact integers (< 2^24). The forward moves values (no arithmetic, no
// rounding, as reshape). The backward is a scatter-sum: gx[..., s, ...] = R_g(sum over the positions p with
// index[p] == s, ascending p, of g[..., p, ...]) in the layer's acc / chunk (mul exact), g read in the
// grads format; positions never picked get +0. docs/layers_sequence.md has the details.
#pragma once

#include "core/module.h"

namespace emu {

Tensor index_select(const Module& m, const Tensor& x, int dim, const Tensor& index);
Tensor gather_rows(const Module& m, const Tensor& x, const Tensor& positions, int time_dim = 1);
Tensor last_valid_step(const Module& m, const Tensor& x, const Tensor& lengths, int time_dim = 1);

}  // namespace emu
