// Op family: attention (layer normalisation, the per-head matrix products of
// multi-head attention and its masked softmax). The arithmetic each op defines
// is written down in docs/layers_attention.md; the CPU reference is
// backends/cpu/{layernorm,attention}_ops.cpp.
//
// Conventions (as core/backend_ops_nn.h):
//  * Result tensors are allocated by the caller, contiguous, with the shapes
//    given; inputs may be any view.
//  * A "reduction" is mac_reduce of numerics/mac.h over terms in the order
//    stated with the op (ascending); a "sum" is one with mul exact and every
//    b_k = 1. An intermediate sum stays in the last accumulator's format (acc,
//    or acc_outer with chunks); zero terms are skipped but keep their position
//    (chunk boundaries and draw sites count all K positions).
//  * `p.out` is the format of the op's results and element-wise steps: the
//    layer's out format in a forward op, its grads format in a backward op.
//  * Draws (formats with :sr only): stage s draws from stream key.stream + s
//    (nn_stage_key); an element-wise step at the row-major index of the element
//    it rounds, a row-level step of row r at index r, a reduction with output o
//    (row-major in its result; a row statistic: the row r) at
//    o * mac_site_count(K, chunk) + its numerics/mac.h site.
//  * Heads: E = H*D features of a token are H heads of D consecutive features
//    (feature h*D + d is feature d of head h), as PyTorch's and Keras' split.
//
// layer_norm_forward:  x (R,D), gamma, beta (D) or null -> y, xhat (R,D), invstd (R). Per row r:
//                      sum1 = sum of x over d ascending (stage 0); mean = R_out(sum1 / D) (1);
//                      d = R_out(x - mean) (2); sum2 = reduction of d*d over d (mul applies; 3);
//                      var = R_out(sum2 / D) (4); ve = R_out(var + eps) (5); invstd = R_out(fn_rsqrt(ve))
//                      (6); xhat = R_out(d * invstd) (7); t = R_out(xhat * gamma) (8); y = R_out(t + beta)
//                      (9); without gamma t = xhat, without beta y = t. Quotients are exact, rounded once.
// layer_norm_backward: gy, xhat (R,D), invstd (R), gamma (D) or null -> gx (R,D), ggamma, gbeta (D), each
//                      optional. out = the grads format. gh = R_out(gy * gamma) (0; gh = gy without gamma);
//                      per row: sg = sum of gh over d (1); sgx = reduction of gh*xhat over d (2);
//                      mg = R_out(sg / D) (3); mgx = R_out(sgx / D) (4); per element t = R_out(gh - mg) (5),
//                      u = R_out(xhat * mgx) (6), v = R_out(t - u) (7), gx = R_out(v * invstd) (8);
//                      per feature d (output d of the reductions): ggamma = R_out(reduction of gy*xhat over
//                      rows r ascending) (reduction 9, rounding 11), gbeta = R_out(sum of gy over rows r
//                      ascending) (reduction 10, rounding 12).
// attention_scores:    x (N,T,H*D), y (N,S,H*D) -> s (N,H,T,S): s[n,h,t,j] = reduction over d ascending of
//                      x[n,t,h*D+d] * y[n,j,h*D+d], rounded R_out (stage 0). Scores Q K^T (x = q, y = k)
//                      and the gradient of the weights dP = dC V^T (x = dC, y = v).
// attention_context:   a (N,H,T,S), y (N,S,H*D) -> c (N,T,H*D): c[n,t,h*D+d] = reduction over the key
//                      position j ascending of a[n,h,t,j] * y[n,j,h*D+d] (stage 0). Context P V (a = P,
//                      y = v) and the gradient of the queries dQ = dS K (a = dS, y = k).
// attention_context_transposed: a (N,H,T,S), x (N,T,H*D) -> c (N,S,H*D): c[n,j,h*D+d] = reduction over
//                      the query position t ascending of a[n,h,t,j] * x[n,t,h*D+d] (stage 0). The gradients
//                      of the values dV = P^T dC (a = P, x = dC) and of the keys dK = dS^T Q (a = dS, x = q).
// attention_softmax_forward: s (N,H,T,S), key_padding (N,S) or null -> probs (N,H,T,S). Position j of row
//                      (n,h,t) is masked when key_padding[n,j] != 0 or (causal and j > t). Over the unmasked
//                      positions only (a masked one enters neither the max nor the sum):
//                      z_j = R_out(s_j * scale) (stage 5); m = max_j z_j (exact; NaNs do not count);
//                      d_j = R_out(z_j - m) (0); e_j = R_out(exp(d_j)) (1); sum = sum of e_j over j
//                      ascending, a masked position a zero term (2; draws at row * mac_site_count(S, chunk) +
//                      site); probs_j = R_out(e_j / sum) (4), the exact quotient; masked probs_j = +0
//                      exactly; a row with every position masked is all +0.
// attention_softmax_forward_fn: attention_softmax_forward with its exp given by `exp` (the policy's
//                      functions.softmax_exp): exact gives attention_softmax_forward's bits; pwl evaluates
//                      e_j = R_out(R_out(slope_k d_j) + intercept_k) (product stage 6, sum stage 1;
//                      numerics/pwl.h). The backward is attention_softmax_backward on these probs.
// attention_softmax_backward: probs, gprobs (N,H,T,S), key_padding (N,S) or null -> gs (N,H,T,S).
//                      out = the grads format. Per row: dot = reduction over j ascending of gprobs_j *
//                      probs_j (0; masked probs are zero terms); unmasked t_j = R_out(gprobs_j - dot) (1),
//                      u_j = R_out(probs_j * t_j) (2), gs_j = R_out(u_j * scale) (3); masked gs_j = +0.
#pragma once

#include <cstdint>

#include "core/backend_types.h"
#include "numerics/hd.h"

namespace emu {

// Stage offsets of attention_softmax_{forward,backward}: softmax_site
// (core/backend_ops_elementwise.h) numbering, plus the scale.
namespace attention_site {
constexpr uint32_t kSub = 0;     // d_j = R(z_j - m)
constexpr uint32_t kExp = 1;     // e_j = R(exp(d_j))
constexpr uint32_t kSum = 2;     // sum_j e_j (a reduction)
constexpr uint32_t kResult = 4;  // probs_j = R(e_j / sum)
constexpr uint32_t kScale = 5;   // z_j = R(s_j * scale)
constexpr uint32_t kPwlMul = 6;  // R(slope_k * d_j) of a pwl exp (numerics/pwl.h)
// Backward.
constexpr uint32_t kReduce = 0;     // dot = sum_j gprobs_j probs_j
constexpr uint32_t kStep1 = 1;      // R(gprobs_j - dot)
constexpr uint32_t kStep2 = 2;      // R(probs_j * t_j)
constexpr uint32_t kGradScale = 3;  // R(u_j * scale)
}  // namespace attention_site

// Whether position j of query row t is masked (key_padding: row n of the
// (N,S) mask, or null).
EMU_HD bool attention_masked(const float* key_padding_row, bool causal, int64_t t, int64_t j) {
  return (causal && j > t) || (key_padding_row && key_padding_row[j] != 0.0f);
}

}  // namespace emu

// Groups of the family (the CUDA backend has one kernel file per group).
#define EMU_OPS_ATTENTION(X) EMU_OPS_LAYERNORM(X) EMU_OPS_ATTENTION_PRODUCTS(X) EMU_OPS_ATTENTION_SOFTMAX(X)

#define EMU_OPS_LAYERNORM(X)                                                                              \
  X(layer_norm_forward,                                                                                   \
    (const MacPolicy& p, float eps, const Tensor& x, const Tensor* gamma, const Tensor* beta, Tensor& y,  \
     Tensor& xhat, Tensor& invstd, DrawKey key),                                                          \
    (p, eps, x, gamma, beta, y, xhat, invstd, key))                                                       \
  X(layer_norm_backward,                                                                                  \
    (const MacPolicy& p, const Tensor& gy, const Tensor& xhat, const Tensor& invstd, const Tensor* gamma, \
     Tensor* gx, Tensor* ggamma, Tensor* gbeta, DrawKey key),                                             \
    (p, gy, xhat, invstd, gamma, gx, ggamma, gbeta, key))

#define EMU_OPS_ATTENTION_PRODUCTS(X)                                                              \
  X(attention_scores,                                                                              \
    (const MacPolicy& p, int64_t heads, const Tensor& x, const Tensor& y, Tensor& s, DrawKey key), \
    (p, heads, x, y, s, key))                                                                      \
  X(attention_context,                                                                             \
    (const MacPolicy& p, int64_t heads, const Tensor& a, const Tensor& y, Tensor& c, DrawKey key), \
    (p, heads, a, y, c, key))                                                                      \
  X(attention_context_transposed,                                                                  \
    (const MacPolicy& p, int64_t heads, const Tensor& a, const Tensor& x, Tensor& c, DrawKey key), \
    (p, heads, a, x, c, key))

#define EMU_OPS_ATTENTION_SOFTMAX(X)                                                           \
  X(attention_softmax_forward,                                                                 \
    (const MacPolicy& p, float scale, bool causal, const Tensor& s, const Tensor* key_padding, \
     Tensor& probs, DrawKey key),                                                              \
    (p, scale, causal, s, key_padding, probs, key))                                            \
  X(attention_softmax_forward_fn,                                                              \
    (const MacPolicy& p, const FunctionApprox& exp, float scale, bool causal, const Tensor& s, \
     const Tensor* key_padding, Tensor& probs, DrawKey key),                                   \
    (p, exp, scale, causal, s, key_padding, probs, key))                                       \
  X(attention_softmax_backward,                                                                \
    (const MacPolicy& p, float scale, bool causal, const Tensor& probs, const Tensor& gprobs,  \
     const Tensor* key_padding, Tensor& gs, DrawKey key),                                      \
    (p, scale, causal, probs, gprobs, key_padding, gs, key))
