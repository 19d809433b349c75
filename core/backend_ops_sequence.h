// Op family: sequence (index gathers and scatter-sums for Embedding,
// index_select and step picking, Conv1d with dilation, global pooling over time).
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
// conv1d_forward:     x (N,C_in,L), w (C_out,C_in/G,KL), bias (C_out) or null -> y (N,C_out,OL),
//                     OL = (L + 2 pad - dil (KL - 1) - 1) / stride + 1 (floor). Reduction over (ci of the
//                     group, k), K = C_in/G*KL, the term of (ci, k) is x[n, ci, ol*stride - pad + k*dil]
//                     (a zero operand outside [0, L)); bias added in the reduction; y = R_out(acc).
// conv1d_grad_input:  gy (N,C_out,OL), w -> gx (N,C_in,L). Reduction over (co of the group, k),
//                     K = C_out/G*KL; the term of (co, k) is gy[n, co, ol] with ol*stride = l + pad - k*dil,
//                     a zero operand where no such ol exists (outside, or off the stride grid).
// conv1d_grad_weight: x (N,C_in,L), gy (N,C_out,OL) -> gw (C_out,C_in/G,KL). Reduction over (n, ol),
//                     K = N*OL; padding positions are zero operands.
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

namespace emu {

struct Conv1dParams {
  int stride = 1;
  int padding = 0;
  int dilation = 1;
  int groups = 1;
};

}  // namespace emu

#define EMU_OPS_SEQUENCE(X)                                                                                        \
  X(index_gather, (const Format& out, const Tensor& index, const Tensor& x, Tensor& y, DrawKey key),               \
    (out, index, x, y, key))                                                                                       \
  X(index_sum,                                                                                                     \
    (const MacPolicy& p, const Tensor& index, int64_t skip, const Tensor& src, Tensor& dst, DrawKey key),          \
    (p, index, skip, src, dst, key))                                                                               \
  X(conv1d_forward,                                                                                                \
    (const MacPolicy& p, const Conv1dParams& cp, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, \
     DrawKey key),                                                                                                 \
    (p, cp, x, w, bias, y, key))                                                                                   \
  X(conv1d_grad_input,                                                                                             \
    (const MacPolicy& p, const Conv1dParams& cp, const Tensor& gy, const Tensor& w, Tensor& gx, DrawKey key),      \
    (p, cp, gy, w, gx, key))                                                                                       \
  X(conv1d_grad_weight,                                                                                            \
    (const MacPolicy& p, const Conv1dParams& cp, const Tensor& x, const Tensor& gy, Tensor& gw, DrawKey key),      \
    (p, cp, x, gy, gw, key))                                                                                       \
  X(temporal_avg_pool_forward,                                                                                     \
    (const MacPolicy& p, int time_dim, const Tensor& x, const Tensor* mask, Tensor& y, DrawKey key),               \
    (p, time_dim, x, mask, y, key))                                                                                \
  X(temporal_avg_pool_backward,                                                                                    \
    (const MacPolicy& p, int time_dim, const Tensor& gy, const Tensor* mask, Tensor& gx, DrawKey key),             \
    (p, time_dim, gy, mask, gx, key))                                                                              \
  X(temporal_max_pool_forward,                                                                                     \
    (const Format& out, int time_dim, const Tensor& x, const Tensor* mask, Tensor& y, Tensor& argmax,             \
     DrawKey key),                                                                                                 \
    (out, time_dim, x, mask, y, argmax, key))                                                                      \
  X(temporal_max_pool_backward,                                                                                    \
    (const MacPolicy& p, int time_dim, const Tensor& gy, const Tensor& argmax, Tensor& gx, DrawKey key),           \
    (p, time_dim, gy, argmax, gx, key))
