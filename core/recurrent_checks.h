// The argument checks of the recurrent ops (core/backend_ops_recurrent.h), one
// definition for every backend, so a bad call fails with the same message on
// the CPU and on a device, before any work. Each check takes the op's tensors
// as the op does and throws std::invalid_argument naming the op and the
// argument; `pwl`: a gate function is pwl, so the slopes are required.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace emu {

// Batch N, steps T, input features I, hidden units H of one recurrent call.
struct RecurrentDims {
  int64_t N, T, I, H;
};

// x (N,T,I), h0, c0 (N,H), w_ih (4H,I), w_hh (4H,H), bias (4H), mask (N,T) -> y (N,T,H), h_n, c_n (N,H),
// xh (N,T,I+H), saved (N,T,6H), slopes (N,T,5H), preact (N,T,4H)
RecurrentDims check_lstm_forward(bool pwl, const Tensor& x, const Tensor& h0, const Tensor& c0,
                                 const Tensor& w_ih, const Tensor& w_hh, const Tensor* bias,
                                 const Tensor* mask, const Tensor& y, const Tensor& h_n, const Tensor& c_n,
                                 const Tensor& xh, const Tensor& saved, const Tensor* slopes,
                                 const Tensor* preact);

// w_ih (4H,I), w_hh (4H,H), xh (N,T,I+H), saved (N,T,6H), slopes (N,T,5H), gy (N,T,H), gh_n, gc_n (N,H),
// mask (N,T) -> dx (N,T,I), dw_ih (4H,I), dw_hh (4H,H), dbias (4H), dh0, dc0 (N,H)
RecurrentDims check_lstm_backward(bool pwl, const Tensor& w_ih, const Tensor& w_hh, const Tensor& xh,
                                  const Tensor& saved, const Tensor* slopes, const Tensor* gy,
                                  const Tensor* gh_n, const Tensor* gc_n, const Tensor* mask,
                                  const Tensor* dx, const Tensor* dw_ih, const Tensor* dw_hh,
                                  const Tensor* dbias, const Tensor& dh0, const Tensor& dc0);

// x (N,T,I), h0 (N,H), w_ih (3H,I), w_hh (3H,H), bias (4H), mask (N,T) -> y (N,T,H), h_n (N,H),
// xh (N,T,I+H), saved (N,T,5H), slopes (N,T,3H), preact (N,T,4H)
RecurrentDims check_gru_forward(bool pwl, const Tensor& x, const Tensor& h0, const Tensor& w_ih,
                                const Tensor& w_hh, const Tensor* bias, const Tensor* mask, const Tensor& y,
                                const Tensor& h_n, const Tensor& xh, const Tensor& saved,
                                const Tensor* slopes, const Tensor* preact);

// w_ih (3H,I), w_hh (3H,H), xh (N,T,I+H), saved (N,T,5H), slopes (N,T,3H), gy (N,T,H), gh_n (N,H),
// mask (N,T) -> dx (N,T,I), dw_ih (3H,I), dw_hh (3H,H), dbias (4H), dh0 (N,H)
RecurrentDims check_gru_backward(bool pwl, const Tensor& w_ih, const Tensor& w_hh, const Tensor& xh,
                                 const Tensor& saved, const Tensor* slopes, const Tensor* gy,
                                 const Tensor* gh_n, const Tensor* mask, const Tensor* dx,
                                 const Tensor* dw_ih, const Tensor* dw_hh, const Tensor* dbias,
                                 const Tensor& dh0);

}  // namespace emu
