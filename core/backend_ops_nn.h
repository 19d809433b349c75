// Op family: nn (convolution, pooling, batch normalisation). The arithmetic
// each op defines is written down in docs/layers_nn.md; the CPU reference is
// backends/cpu/{conv,pool,norm}_ops.cpp.
//
// Conventions shared by every op below:
//  * Result tensors are allocated by the caller, contiguous, with the shapes
//    given; inputs may be any view.
//  * A "reduction" is mac_reduce of numerics/mac.h over terms in the canonical
//    order stated with the op. A "sum" is such a reduction with mul exact and
//    every b_k = 1 (zero terms skipped, chunks honoured); an intermediate sum is
//    left in the last accumulator's format (acc, or acc_outer with chunks).
//  * `p.out` (or `out`) is the format of the op's results and element-wise
//    steps: the layer's out format in a forward op, its grads format in a
//    backward op.
//  * Draws (only formats with :sr draw): op stage s (a step listed with the op,
//    0 where none is named) draws from stream key.stream + s (nn_stage_key); an
//    element-wise step at the row-major index of the element it rounds, a
//    reduction's output o (row-major in its result) at o * mac_site_count(K,
//    chunk) + site as gemm does (pooling: K = the largest window, or the largest
//    number of windows covering one input).
//  * Conv: tap (kh, kw) of output (oh, ow) reads input (oh*stride_h - pad_h + kh*dilation_h,
//    ow*stride_w - pad_w + kw*dilation_w); OH = (H + 2 pad_h - dilation_h (KH - 1) - 1) / stride_h + 1
//    (floor), OW likewise; G = groups, C_in/G and C_out/G channels per group; padding positions are
//    zero operands. Conv1d is this op with H = KH = 1: x (N,C_in,1,L), w (C_out,C_in/G,1,KL).
//  * Pool: OH = (H + 2 pad_h - kernel_h) / stride_h + 1 (floor; no ceil mode).
//
// conv2d_forward:     x (N,C_in,H,W), w (C_out,C_in/G,KH,KW), bias (C_out) or null -> y (N,C_out,OH,OW).
//                     Reduction over (ci of the group, kh, kw), K = C_in/G*KH*KW; bias added in the
//                     reduction (acc = R(acc + bias)); y = R_out(acc).
// conv2d_grad_input:  gy (N,C_out,OH,OW), w (C_out,C_in/G,KH,KW) -> gx (N,C_in,H,W). Reduction over
//                     (co of the group, kh, kw), K = C_out/G*KH*KW; the term of (co, kh, kw) is gy at the
//                     output pixel whose tap (kh, kw) reads (ih, iw), a zero operand where none exists
//                     (outside, or off the stride grid).
// conv2d_grad_weight: x (N,C_in,H,W), gy (N,C_out,OH,OW) -> gw (C_out,C_in/G,KH,KW). Reduction over
//                     (n, oh, ow), K = N*OH*OW.
// channel_sum:        x (N,C,S) -> y (C): y[c] = R_out(sum over (n, s) of x[n,c,s]).
// max_pool2d_forward: x (N,C,H,W) -> y (N,C,OH,OW), argmax (N,C,OH,OW): y = R_out(max of the window)
//                     (stage 0), ties to the first index in row-major window order, a NaN beats every
//                     number (the first NaN wins); argmax = ih*W + iw as a float (H*W < 2^24).
// max_pool2d_backward: gy (N,C,OH,OW), argmax -> gx (N,C,H,W): gx[i] = R_out(sum over the outputs o
//                     whose window covers i, ascending, of (argmax[o] == i ? gy[o] : 0)).
// avg_pool2d_forward: x (N,C,H,W) -> y (N,C,OH,OW): S = sum of the window in row-major window order
//                     (padding positions are zero terms; stage 0), y = R_out(S / (KH*KW)) with the exact
//                     quotient (stage 1; count_include_pad).
// avg_pool2d_backward: gy (N,C,OH,OW) -> gx (N,C,H,W): q[o] = R_out(gy[o] / (KH*KW)) (stage 0);
//                     gx[i] = R_out(sum over the outputs o covering i, ascending, of q[o]) (draws: stage 1).
// adaptive_avg_pool2d_forward / _backward: as avg_pool2d with PyTorch's windows:
//                     start = floor(o*H/OH), end = ceil((o+1)*H/OH), count = window size; OH, OW from
//                     the result / gradient shape.
// batch_norm_stats:   x (N,C,S) -> mean, var, var_unbiased (C). Per channel, M = N*S: sum1 = sum of x;
//                     mean = R_out(sum1 / M) (stage 1); d = R_out(x - mean) (stage 2); sum2 = reduction
//                     of d*d over (n, s) (mul applies); var = R_out(sum2 / M) (stage 4),
//                     var_unbiased = R_out(sum2 / (M-1)) (stage 5; NaN when M = 1). Draws of sum1 use
//                     stage 0, of sum2 stage 3.
// batch_norm_normalize: x (N,C,S), mean, var (C), gamma, beta (C) or null -> y, xhat (N,C,S), invstd (C):
//                     ve = R_out(var + eps) (0); invstd = R_out(fn_rsqrt(ve)) (1); d = R_out(x - mean) (2);
//                     xhat = R_out(d * invstd) (3); t = R_out(xhat * gamma) (4); y = R_out(t + beta) (5);
//                     without gamma t = xhat, without beta y = t.
// batch_norm_update_running: mean, var_unbiased (C); running_mean, running_var (C) updated in place:
//                     r' = R_out(R_out(momentum * v) + R_out((1 - momentum) * r)), 1 - momentum taken in
//                     binary32; stages 0, 1, 2 for the mean, 3, 4, 5 for the variance.
// batch_norm_backward: gy, xhat (N,C,S), invstd (C), gamma (C) or null -> gx (N,C,S), ggamma, gbeta (C),
//                     each optional. out = the grads format. sg = sum of gy (0); sgx = reduction of
//                     gy*xhat (1); gbeta = R_out(sg) (2); ggamma = R_out(sgx) (3); k = R_out(gamma *
//                     invstd) or R_out(invstd) without gamma (6). With batch statistics:
//                     mg = R_out(sg / M) (4), mgx = R_out(sgx / M) (5), t = R_out(gy - mg) (7),
//                     u = R_out(xhat * mgx) (8), v = R_out(t - u) (9), gx = R_out(v * k) (10);
//                     with running statistics gx = R_out(gy * k) (10).
#pragma once

#include "core/backend_types.h"

namespace emu {

// The draw key of stage `stage` of an nn op called with `key`: the stream
// key.stream + stage, as the element-wise family numbers its sites.
inline DrawKey nn_stage_key(DrawKey key, uint32_t stage) { return DrawKey{key.seed, key.stream + stage}; }

}  // namespace emu

// Groups of the family (the CUDA backend has one kernel file per group):
// convolution (with channel_sum, its bias gradient), pooling, batch norm.
#define EMU_OPS_NN(X) EMU_OPS_CONV(X) EMU_OPS_POOL(X) EMU_OPS_BATCHNORM(X)

#define EMU_OPS_CONV(X)                                                                                \
  X(conv2d_forward,                                                                                    \
    (const MacPolicy& p, const Conv2dParams& cp, const Tensor& x, const Tensor& w, const Tensor* bias, \
     Tensor& y, DrawKey key),                                                                          \
    (p, cp, x, w, bias, y, key))                                                                       \
  X(conv2d_grad_input,                                                                                 \
    (const MacPolicy& p, const Conv2dParams& cp, const Tensor& gy, const Tensor& w, Tensor& gx,        \
     DrawKey key),                                                                                     \
    (p, cp, gy, w, gx, key))                                                                           \
  X(conv2d_grad_weight,                                                                                \
    (const MacPolicy& p, const Conv2dParams& cp, const Tensor& x, const Tensor& gy, Tensor& gw,        \
     DrawKey key),                                                                                     \
    (p, cp, x, gy, gw, key))                                                                           \
  X(channel_sum, (const MacPolicy& p, const Tensor& x, Tensor& y, DrawKey key), (p, x, y, key))

#define EMU_OPS_POOL(X)                                                                                   \
  X(max_pool2d_forward,                                                                                   \
    (const Format& out, const Pool2dParams& pp, const Tensor& x, Tensor& y, Tensor& argmax, DrawKey key), \
    (out, pp, x, y, argmax, key))                                                                         \
  X(max_pool2d_backward,                                                                                  \
    (const MacPolicy& p, const Pool2dParams& pp, const Tensor& gy, const Tensor& argmax, Tensor& gx,      \
     DrawKey key),                                                                                        \
    (p, pp, gy, argmax, gx, key))                                                                         \
  X(avg_pool2d_forward,                                                                                   \
    (const MacPolicy& p, const Pool2dParams& pp, const Tensor& x, Tensor& y, DrawKey key),                \
    (p, pp, x, y, key))                                                                                   \
  X(avg_pool2d_backward,                                                                                  \
    (const MacPolicy& p, const Pool2dParams& pp, const Tensor& gy, Tensor& gx, DrawKey key),              \
    (p, pp, gy, gx, key))                                                                                 \
  X(adaptive_avg_pool2d_forward, (const MacPolicy& p, const Tensor& x, Tensor& y, DrawKey key),           \
    (p, x, y, key))                                                                                       \
  X(adaptive_avg_pool2d_backward, (const MacPolicy& p, const Tensor& gy, Tensor& gx, DrawKey key),        \
    (p, gy, gx, key))

#define EMU_OPS_BATCHNORM(X)                                                                             \
  X(batch_norm_stats,                                                                                    \
    (const MacPolicy& p, const Tensor& x, Tensor& mean, Tensor& var, Tensor& var_unbiased, DrawKey key), \
    (p, x, mean, var, var_unbiased, key))                                                                \
  X(batch_norm_normalize,                                                                                \
    (const Format& out, float eps, const Tensor& x, const Tensor& mean, const Tensor& var,               \
     const Tensor* gamma, const Tensor* beta, Tensor& y, Tensor& xhat, Tensor& invstd, DrawKey key),     \
    (out, eps, x, mean, var, gamma, beta, y, xhat, invstd, key))                                         \
  X(batch_norm_update_running,                                                                           \
    (const Format& out, float momentum, const Tensor& mean, const Tensor& var_unbiased,                  \
     Tensor& running_mean, Tensor& running_var, DrawKey key),                                            \
    (out, momentum, mean, var_unbiased, running_mean, running_var, key))                                 \
  X(batch_norm_backward,                                                                                 \
    (const MacPolicy& p, bool batch_stats, const Tensor& gy, const Tensor& xhat, const Tensor& invstd,   \
     const Tensor* gamma, Tensor* gx, Tensor* ggamma, Tensor* gbeta, DrawKey key),                       \
    (p, batch_stats, gy, xhat, invstd, gamma, gx, ggamma, gbeta, key))
