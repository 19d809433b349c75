// Op family: element-wise layers (activations, residual add, dropout), softmax
// and log-softmax over the last dimension, and the losses.
//
// Every formula, rounding and draw site is written down in
// docs/layers_elementwise.md. The ops read their inputs as given: the layer has
// already rounded them into the policy's read formats (layers/layer_io.h).
// `MacPolicy` arguments name the reductions' mul / acc / chunk / acc_outer and,
// in `out`, the format of the op's element-wise results (the layer's out format
// in a forward op, its grads format in a backward op).
//
// Random draws under :sr: rounding site s of an op draws from stream
// key.stream + s (softmax_site, loss_site below; the activations number their
// steps 0, 1, 2 in activation_grad's order); an element-wise rounding of
// element i (row-major over the whole tensor) at index i; a reduction over row r
// at index r * mac_site_count(K, chunk) + its numerics/mac.h site, with
// mac_site_count(K, chunk) = 2K + ceil(K / chunk) + 2 (numerics/mac.h).
//
// The per-element arithmetic lives in numerics/ (element_arith.h, activations.h,
// row_sites.h): one host+device definition that the CPU loops and the CUDA
// kernels both call.
#pragma once

#include "core/backend_types.h"

// activation_forward   x: (n) -> y: (n); y[i] = R_out(f(x[i])) with f = activation_value (site 0). When
//                      fn.pwl() (gelu, silu, tanh, sigmoid; relu ignores fn): y[i] = pwl_value(fn, x[i])
//                      (numerics/pwl.h): R_out(R_out(slope_k * x[i]) + intercept_k), the product at site
//                      kPwlMulSite, the sum (or a side's one rounding) at site 0.
// activation_backward  x, y: the forward's input and output, gy: (n) -> gx: (n), activation_grad in format g
//                      (sites 0..2). When fn.pwl(): the derivative of the approximation,
//                      gx[i] = R_g(gy[i] * pwl_slope(fn, x[i])) (site 0; activation_pwl_grad).
// elementwise_add      a, b: (n) -> y: (n); y[i] = R_f(a[i] + b[i]), exact sum, one rounding (site 0).
// dropout              x: (n) -> y: (n); element i is kept when
//                      philox_draw(mask_key.seed, mask_key.stream, i) >= dropout_threshold(p), and then
//                      y[i] = R_f(x[i] * scale) (round_key, site 0), else +0. The backward pass is the
//                      same op on the gradient with the same mask_key.
// softmax_forward      x: (rows, C) -> y: (rows, C); softmax (log = false) or log-softmax (true) of each row.
// softmax_forward_fn   softmax_forward with its exp given by `exp` (exact: softmax_forward's bits; pwl:
//                      e_j = pwl_value(exp, d_j), the product at site softmax_site::kPwlMul, the sum at
//                      kExp).
// softmax_backward     y: the forward's output, gy: (rows, C) -> gx: (rows, C). The same formulas whatever
//                      the forward's exp (the backward of a pwl softmax is the exact softmax's, from y).
// cross_entropy_forward  logits: (N, C), targets: (N) class indices (exact integers) or ignore_index
//                      -> logp: (N, C) (log-softmax as softmax_forward, sites 0..4), loss: () the mean over
//                      rows whose target != ignore_index of -sum_j q_j logp_j, q_t = q_on, q_j = q_off (j !=
//                      t).
// cross_entropy_backward logp: (N, C), targets: (N), gloss: () -> glogits: (N, C).
// mse_forward          x, target: (n) -> diff: (n) = R_out(x - target), loss: () = R_out(sum_i diff_i^2 / n).
// mse_backward         diff: (n), gloss: () -> gx: (n) = R_g(diff_i * w), w = R_g(2 gloss / n), and when
//                      gtarget is not null gtarget: (n) = R_g(-(diff_i * w)).
#define EMU_OPS_ELEMENTWISE(X)                                                                               \
  X(activation_forward,                                                                                      \
    (Activation kind, const FunctionApprox& fn, const Format& out, const Tensor& x, Tensor& y, DrawKey key), \
    (kind, fn, out, x, y, key))                                                                              \
  X(activation_backward,                                                                                     \
    (Activation kind, const FunctionApprox& fn, const Format& g, const Tensor& x, const Tensor& y,           \
     const Tensor& gy, Tensor& gx, DrawKey key),                                                             \
    (kind, fn, g, x, y, gy, gx, key))                                                                        \
  X(elementwise_add, (const Format& f, const Tensor& a, const Tensor& b, Tensor& y, DrawKey key),            \
    (f, a, b, y, key))                                                                                       \
  X(dropout,                                                                                                 \
    (float p, float scale, const Format& f, const Tensor& x, Tensor& y, DrawKey mask_key,                    \
     DrawKey round_key),                                                                                     \
    (p, scale, f, x, y, mask_key, round_key))                                                                \
  X(softmax_forward, (const MacPolicy& p, bool log, const Tensor& x, Tensor& y, DrawKey key),                \
    (p, log, x, y, key))                                                                                     \
  X(softmax_forward_fn,                                                                                      \
    (const MacPolicy& p, bool log, const FunctionApprox& exp, const Tensor& x, Tensor& y, DrawKey key),      \
    (p, log, exp, x, y, key))                                                                                \
  X(softmax_backward,                                                                                        \
    (const MacPolicy& p, bool log, const Tensor& y, const Tensor& gy, Tensor& gx, DrawKey key),              \
    (p, log, y, gy, gx, key))                                                                                \
  X(cross_entropy_forward,                                                                                   \
    (const MacPolicy& p, const Tensor& logits, const Tensor& targets, int64_t ignore_index, float q_on,      \
     float q_off, Tensor& logp, Tensor& loss, DrawKey key),                                                  \
    (p, logits, targets, ignore_index, q_on, q_off, logp, loss, key))                                        \
  X(cross_entropy_backward,                                                                                  \
    (const Format& g, const Tensor& logp, const Tensor& targets, int64_t ignore_index, float q_on,           \
     float q_off, const Tensor& gloss, Tensor& glogits, DrawKey key),                                        \
    (g, logp, targets, ignore_index, q_on, q_off, gloss, glogits, key))                                      \
  X(mse_forward,                                                                                             \
    (const MacPolicy& p, const Tensor& x, const Tensor& target, Tensor& diff, Tensor& loss, DrawKey key),    \
    (p, x, target, diff, loss, key))                                                                         \
  X(mse_backward,                                                                                            \
    (const Format& g, const Tensor& diff, const Tensor& gloss, Tensor& gx, Tensor* gtarget, DrawKey key),    \
    (g, diff, gloss, gx, gtarget, key))
