// Op family: sequence (index gathers and scatter-sums for Embedding,
// index_select and step picking, global pooling over time). Conv1d has no op of
// its own: it runs the Conv2d ops (core/backend_ops_nn.h) on (N, C, 1, L).
// The arithmetic each op defines is written down in docs/layers_sequence.md; the
// CPU reference is backends/cpu/sequence_ops.cpp.
//
// Conventions (as core/backend_ops_nn.h):
//  * Result tensors are allocated by the caller, contiguous, with the shapes
//    given; inputs may be any view. Index tensors hold exact non-negative
//    integers in binary32 (< 2^24); anything else is an error naming the position.
//  * A "reduction" is mac_reduce of numerics/mac.h over terms in the stated
//    canonical order; a "sum" is one with mul exact and every b_k = 1 (zero terms
//    skipped, chunks honoured).
//  * `p.out` (or `out`) is the format of the op's results: the layer's out format
//    in a forward op, its grads format in a backward op.
//  * Draws (formats with :sr only): stage s of an op draws from stream
//    key.stream + s (nn_stage_key); an element-wise rounding at the row-major index
//    of the element it rounds; output o of a reduction (row-major in its result)
//    at o * mac_site_count(K, chunk) + site, numerics/mac.h's site numbering, with
//    K the op's stated site stride (the largest number of terms any output can have).
//
// index_gather:  index (P), x (A,S,B) -> y (A,P,B): y[a,p,b] = R_out(x[a, index[p], b]) (stage 0).
//                Plain fp32 `out` copies. Embedding: A = 1, S = rows of the table, B = dim.
// index_sum:     index (P), src (A,P,B) -> dst (A,S,B): dst[a,s,b] = R_out(sum over the positions p
//                with index[p] == s, ascending p, of src[a,p,b]); the terms are only those
//                occurrences (k-th occurrence = term k, so chunks count occurrences); s never
//                selected, or s == skip (skip >= 0: Embedding's padding_idx), gives R_out(+0) = +0.
//                Site stride K = P (stage 0).
// Temporal pools: time_dim 2: x (N,C,L); time_dim 1: x (N,L,C); y (N,C). mask (N,L) or null: step t of
// sequence n takes part when mask[n,t] != 0 (null: every step); a sequence without a valid step is an error.
// temporal_avg_pool_forward:  y[n,c] = R_out(S / cnt_n) with S = sum of x[n,c,t] over the valid t,
//                     ascending (only valid steps are terms; site stride K = L; stage 0), cnt_n = the
//                     number of valid steps, exact quotient rounded once (stage 1).
// temporal_avg_pool_backward: gy (N,C) -> gx (shape of x): q[n,c] = R_out(gy[n,c] / cnt_n) (stage 0);
//                     gx = R_out(sum of the one term q[n,c]) at valid steps (K = 1; stage 1), +0 elsewhere.
//                     Unmasked, both equal adaptive_avg_pool2d with a 1x1 output on (N,C,1,L).
// temporal_max_pool_forward: -> y (N,C), argmax (N,C): y = R_out(max over the valid steps) (stage 0), ties
//                     to the earliest step, a NaN beats every number (the first NaN wins); argmax = t.
// temporal_max_pool_backward: gy (N,C), argmax (N,C) -> gx: gx[n,t,c] = R_out(sum of the one term
//                     (argmax[n,c] == t ? gy[n,c] : 0)) (K = 1; stage 0), as max_pool2d_backward.
#pragma once

#include "core/backend_types.h"

#define EMU_OPS_SEQUENCE(X)                                                                               \
  X(index_gather, (const Format& out, const Tensor& index, const Tensor& x, Tensor& y, DrawKey key),      \
    (out, index, x, y, key))                                                                              \
  X(index_sum,                                                                                            \
    (const MacPolicy& p, const Tensor& index, int64_t skip, const Tensor& src, Tensor& dst, DrawKey key), \
    (p, index, skip, src, dst, key))                                                                      \
  X(temporal_avg_pool_forward,                                                                            \
    (const MacPolicy& p, int time_dim, const Tensor& x, const Tensor* mask, Tensor& y, DrawKey key),      \
    (p, time_dim, x, mask, y, key))                                                                       \
  X(temporal_avg_pool_backward,                                                                           \
    (const MacPolicy& p, int time_dim, const Tensor& gy, const Tensor* mask, Tensor& gx, DrawKey key),    \
    (p, time_dim, gy, mask, gx, key))                                                                     \
  X(temporal_max_pool_forward,                                                                            \
    (const Format& out, int time_dim, const Tensor& x, const Tensor* mask, Tensor& y, Tensor& argmax,     \
     DrawKey key),                                                                                        \
    (out, time_dim, x, mask, y, argmax, key))                                                             \
  X(temporal_max_pool_backward,                                                                           \
    (const MacPolicy& p, int time_dim, const Tensor& gy, const Tensor& argmax, Tensor& gx, DrawKey key),  \
    (p, time_dim, gy, argmax, gx, key))
