// Op family: recurrent (LSTM and GRU layers, one layer in one direction per call).
// The arithmetic is written down in docs/layers_recurrent.md; the CPU reference
// is backends/cpu/recurrent_ops.cpp. The layers (layers/lstm.cpp, layers/gru.cpp)
// read the operands into the policy's formats and record autograd; these ops
// run the recurrence and every reduction of the backward pass.
//
// Conventions shared by every op below:
//  * Batch first: x (N,T,I), y (N,T,H); per-step tensors are (N,T,...) too. G = 4
//    gates for the LSTM (i, f, g, o, PyTorch's order), 3 for the GRU (r, z, n).
//    Results are allocated by the caller, contiguous, zero-filled; inputs may be
//    any view.
//  * `mask` (N,T) or null (every step valid): step t of sequence n is valid when
//    mask[n,t] != 0. A step that is not valid leaves the state unchanged (h and
//    c carried), writes y[n,t,:] = +0 and gets zero gate gradients; its output
//    gradient is ignored. A prefix mask (lengths) gives PyTorch's packed-sequence
//    semantics in both directions: the reverse direction carries its initial
//    state through the padding and starts at each sequence's last valid step.
//  * `reverse`: steps run t = T-1 .. 0 instead of 0 .. T-1; t is always the time
//    index of x and y.
//  * Forward: the gate pre-activations of step t are reductions (numerics/mac.h,
//    through mac_gemm) of the row xh[n,t,:] = [x[n,t,:], R_act(h_{t-1}[n,:])]
//    (I + H terms: input features, then hidden features) with the rows of
//    [w_ih | w_hh], then the bias: pre = R_out(R_acc(sum) + bias). Element-wise
//    results are rounded to p.out in the order of lstm_cell_forward /
//    gru_cell_forward.
//  * Backward: p.out is the grads format. Per step (opposite processing order)
//    the element-wise gate gradients (lstm_cell_backward / gru_cell_backward),
//    then the hidden-state gradient as a reduction over the gate units in
//    ascending order (i, f, g, o blocks; GRU r, z, n blocks), K = G*H. After the
//    steps, with the gate gradients dg (N*T rows, row n*T + t):
//      dx (N,T,I)      = reduction over the gate units of dg x w_ih (GRU: da_r, da_z, da_n)
//      dw_ih (G*H, I)  = reduction over the rows (n, t) ascending of dg x x
//      dw_hh (G*H, H)  = the same with the read h_{t-1} of xh (GRU: da_r, da_z, da_nh)
//      dbias           = plain sums (mul exact, p's acc and chunks) over the rows (n, t)
//    each written when not null.
//  * Draws (:sr only): step t draws from the stream recurrent_step_key(key, t),
//    site s (lstm_site / gru_site) from its stream + s: an element-wise rounding
//    of element (n, j) at index n*H + j; a reduction (site of a gemm) as gemm
//    numbers its outputs o = n*cols + c: index o * mac_site_count(K, chunk) + its
//    mac site. The whole-sequence reductions of the backward draw from
//    key.stream + kGradX / kGradWih / kGradWhh / kGradBias in the same way.
//
// lstm_forward:  x (N,T,I) read, h0, c0 (N,H) read, w_ih (4H,I), w_hh (4H,H), bias (4H) or null
//                (read) -> y (N,T,H), h_n, c_n (N,H), xh (N,T,I+H) the reductions' read rows,
//                saved (N,T,6H) = [i, f, g, o, tanh(c_t), c_{t-1}] per valid step, preact (N,T,4H)
//                or null = the gate pre-activations (inspection and tests).
// lstm_backward: w_ih, w_hh, xh, saved, mask as in the forward; gy (N,T,H), gh_n, gc_n (N,H) or null
//                (read grads) -> dx (N,T,I), dw_ih (4H,I), dw_hh (4H,H), dbias (4H) each or null,
//                dh0, dc0 (N,H).
// gru_forward:   x, h0 as above, w_ih (3H,I), w_hh (3H,H), bias (4H) = [b_r, b_z, b_in, b_hn] or null
//                -> y (N,T,H), h_n (N,H), xh (N,T,I+H), saved (N,T,5H) = [r, z, n, a_nh, d],
//                preact (N,T,4H) or null = [a_r, a_z, a_nx, a_nh]. r and z: one reduction over
//                (input, hidden features), then b_r / b_z; a_nx: over the input features, then
//                b_in; a_nh: over the hidden features, then b_hn.
// gru_backward:  as lstm_backward without the cell state; dbias (4H) = sums of
//                [da_r, da_z, da_n, da_nh].
//
// Gate functions (`fns`, GateFunctions below): the policy's sigmoid and tanh,
// each exact or pwl (numerics/pwl.h). A pwl gate value is pwl_value(x) =
// R(R(slope_k x) + intercept_k), the sum (or a side's one rounding) at the
// gate's site (kI, kF, ...), the product at its kPwl* site. When either
// function is pwl, the forward also writes `slopes` (LSTM (N,T,5H) = the slopes
// of [i, f, g, o, tanh(c_t)], GRU (N,T,3H) = [r, z, n], pwl_slope at the
// function's input; an exact function's entries stay 0) and the backward reads
// them: a pwl gate's gradient is the derivative of the approximation,
// R(d * slope), one rounding at the first site of the gate's triple (kGradI,
// kTanhGrad, ...), in place of the exact formula from the gate's value. When
// both are exact, slopes may be null in both ops and is not touched.
#pragma once

#include <cstdint>

#include "core/backend_types.h"
#include "core/draw_key.h"

#define EMU_OPS_RECURRENT(X)                                                                                 \
  X(lstm_forward,                                                                                            \
    (const MacPolicy& p, const GateFunctions& fns, const Format& act, const Tensor& x, const Tensor& h0,     \
     const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh, const Tensor* bias, const Tensor* mask,       \
     bool reverse, Tensor& y, Tensor& h_n, Tensor& c_n, Tensor& xh, Tensor& saved, Tensor* slopes,           \
     Tensor* preact, DrawKey key),                                                                           \
    (p, fns, act, x, h0, c0, w_ih, w_hh, bias, mask, reverse, y, h_n, c_n, xh, saved, slopes, preact, key))  \
  X(lstm_backward,                                                                                           \
    (const MacPolicy& p, const GateFunctions& fns, const Tensor& w_ih, const Tensor& w_hh, const Tensor& xh, \
     const Tensor& saved, const Tensor* slopes, const Tensor* gy, const Tensor* gh_n, const Tensor* gc_n,    \
     const Tensor* mask, bool reverse, Tensor* dx, Tensor* dw_ih, Tensor* dw_hh, Tensor* dbias, Tensor& dh0, \
     Tensor& dc0, DrawKey key),                                                                              \
    (p, fns, w_ih, w_hh, xh, saved, slopes, gy, gh_n, gc_n, mask, reverse, dx, dw_ih, dw_hh, dbias, dh0,     \
     dc0, key))                                                                                              \
  X(gru_forward,                                                                                             \
    (const MacPolicy& p, const GateFunctions& fns, const Format& act, const Tensor& x, const Tensor& h0,     \
     const Tensor& w_ih, const Tensor& w_hh, const Tensor* bias, const Tensor* mask, bool reverse,           \
     Tensor& y, Tensor& h_n, Tensor& xh, Tensor& saved, Tensor* slopes, Tensor* preact, DrawKey key),        \
    (p, fns, act, x, h0, w_ih, w_hh, bias, mask, reverse, y, h_n, xh, saved, slopes, preact, key))           \
  X(gru_backward,                                                                                            \
    (const MacPolicy& p, const GateFunctions& fns, const Tensor& w_ih, const Tensor& w_hh, const Tensor& xh, \
     const Tensor& saved, const Tensor* slopes, const Tensor* gy, const Tensor* gh_n, const Tensor* mask,    \
     bool reverse, Tensor* dx, Tensor* dw_ih, Tensor* dw_hh, Tensor* dbias, Tensor& dh0, DrawKey key),       \
    (p, fns, w_ih, w_hh, xh, saved, slopes, gy, gh_n, mask, reverse, dx, dw_ih, dw_hh, dbias, dh0, key))

namespace emu {

// The draw key of time step t of a recurrent op called with `key`: a hash, so
// that steps, and the sites of one step (stream + site), do not share streams.
inline DrawKey recurrent_step_key(DrawKey key, int64_t t) {
  return DrawKey{key.seed, mix64(key.stream ^ mix64(0x5bd1e9955bd1e995ull + static_cast<uint64_t>(t)))};
}

}  // namespace emu
