#include "core/recurrent_checks.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace emu {
namespace {

using Dims = RecurrentDims;

[[noreturn]] void shape_error(const char* op, const std::string& what) {
  throw std::invalid_argument(fmt::format("{}: {}", op, what));
}

void expect_shape(const char* op, const char* name, const Tensor& t, const Shape& shape) {
  if (t.shape() != shape)
    shape_error(
        op, fmt::format("{} has shape {}, expected {}", name, shape_string(t.shape()), shape_string(shape)));
}

void expect_output(const char* op, const char* name, const Tensor& t, const Shape& shape) {
  expect_shape(op, name, t, shape);
  if (!t.is_contiguous()) shape_error(op, fmt::format("{} must be contiguous", name));
}

// The op's dimensions from w_ih (G*H, I), w_hh (G*H, H) and N, T.
Dims dims_of(const char* op, int64_t N, int64_t T, const Tensor& w_ih, const Tensor& w_hh, int64_t gates) {
  if (w_hh.ndim() != 2 || w_hh.dim(0) != gates * w_hh.dim(1))
    shape_error(op, fmt::format("w_hh has shape {}, expected ({} H, H)", shape_string(w_hh.shape()), gates));
  const int64_t H = w_hh.dim(1);
  if (w_ih.ndim() != 2 || w_ih.dim(0) != gates * H)
    shape_error(op,
                fmt::format("w_ih has shape {}, expected ({}, I)", shape_string(w_ih.shape()), gates * H));
  return {N, T, w_ih.dim(1), H};
}

// x (N,T,I): N and T, checked against I.
Dims forward_dims(const char* op, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, int64_t gates) {
  if (x.ndim() != 3) shape_error(op, fmt::format("x must be (N, T, I), got {}", shape_string(x.shape())));
  const Dims d = dims_of(op, x.dim(0), x.dim(1), w_ih, w_hh, gates);
  if (x.dim(2) != d.I) shape_error(op, fmt::format("x has {} features, w_ih {}", x.dim(2), d.I));
  return d;
}

// xh (N,T,I+H): N and T, checked against I and H.
Dims backward_dims(const char* op, const Tensor& xh, const Tensor& w_ih, const Tensor& w_hh, int64_t gates) {
  if (xh.ndim() != 3)
    shape_error(op, fmt::format("xh must be (N, T, I+H), got {}", shape_string(xh.shape())));
  const Dims d = dims_of(op, xh.dim(0), xh.dim(1), w_ih, w_hh, gates);
  expect_shape(op, "xh", xh, {d.N, d.T, d.I + d.H});
  return d;
}

// slopes (N,T,width): required when a gate function is pwl, else unused.
void forward_slopes(const char* op, bool pwl, const Tensor* slopes, const Dims& d, int64_t width) {
  if (!pwl) return;
  if (!slopes) shape_error(op, "a pwl gate function needs the slopes output");
  expect_output(op, "slopes", *slopes, {d.N, d.T, width});
}

void backward_slopes(const char* op, bool pwl, const Tensor* slopes, const Dims& d, int64_t width) {
  if (!pwl) return;
  if (!slopes) shape_error(op, "a pwl gate function needs the forward's slopes");
  expect_shape(op, "slopes", *slopes, {d.N, d.T, width});
}

void check_grad_outputs(const char* op, const Dims& d, int64_t GH, const Tensor* dx, const Tensor* dw_ih,
                        const Tensor* dw_hh) {
  if (dx) expect_output(op, "dx", *dx, {d.N, d.T, d.I});
  if (dw_ih) expect_output(op, "dw_ih", *dw_ih, {GH, d.I});
  if (dw_hh) expect_output(op, "dw_hh", *dw_hh, {GH, d.H});
}

void check_mask(const char* op, const Tensor* mask, const Dims& d) {
  if (mask) expect_shape(op, "mask", *mask, {d.N, d.T});
}

// The forward of `gates` gates (LSTM 4, GRU 3), saving `saved` and `slopes` values
// per unit and step; c0 and c_n: the LSTM's cell state, null for the GRU.
Dims forward(const char* op, int64_t gates, int64_t saved_width, int64_t slopes_width, bool pwl,
             const Tensor& x, const Tensor& h0, const Tensor* c0, const Tensor& w_ih, const Tensor& w_hh,
             const Tensor* bias, const Tensor* mask, const Tensor& y, const Tensor& h_n, const Tensor* c_n,
             const Tensor& xh, const Tensor& saved, const Tensor* slopes, const Tensor* preact) {
  const Dims d = forward_dims(op, x, w_ih, w_hh, gates);
  const int64_t N = d.N, T = d.T, H = d.H;
  expect_shape(op, "h0", h0, {N, H});
  if (c0) expect_shape(op, "c0", *c0, {N, H});
  if (bias) expect_shape(op, "bias", *bias, {4 * H});
  expect_output(op, "y", y, {N, T, H});
  expect_output(op, "h_n", h_n, {N, H});
  if (c_n) expect_output(op, "c_n", *c_n, {N, H});
  expect_output(op, "xh", xh, {N, T, d.I + H});
  expect_output(op, "saved", saved, {N, T, saved_width * H});
  forward_slopes(op, pwl, slopes, d, slopes_width * H);
  if (preact) expect_output(op, "preact", *preact, {N, T, 4 * H});
  check_mask(op, mask, d);
  return d;
}

// The backward of the same; gc_n and dc0: the LSTM's cell state, null for the GRU.
Dims backward(const char* op, int64_t gates, int64_t saved_width, int64_t slopes_width, bool pwl,
              const Tensor& w_ih, const Tensor& w_hh, const Tensor& xh, const Tensor& saved,
              const Tensor* slopes, const Tensor* gy, const Tensor* gh_n, const Tensor* gc_n,
              const Tensor* mask, const Tensor* dx, const Tensor* dw_ih, const Tensor* dw_hh,
              const Tensor* dbias, const Tensor& dh0, const Tensor* dc0) {
  const Dims d = backward_dims(op, xh, w_ih, w_hh, gates);
  const int64_t N = d.N, T = d.T, H = d.H;
  expect_shape(op, "saved", saved, {N, T, saved_width * H});
  backward_slopes(op, pwl, slopes, d, slopes_width * H);
  if (gy) expect_shape(op, "gy", *gy, {N, T, H});
  if (gh_n) expect_shape(op, "gh_n", *gh_n, {N, H});
  if (gc_n) expect_shape(op, "gc_n", *gc_n, {N, H});
  check_grad_outputs(op, d, gates * H, dx, dw_ih, dw_hh);
  if (dbias) expect_output(op, "dbias", *dbias, {4 * H});
  expect_output(op, "dh0", dh0, {N, H});
  if (dc0) expect_output(op, "dc0", *dc0, {N, H});
  check_mask(op, mask, d);
  return d;
}

}  // namespace

// LSTM: saved [i, f, g, o, tanh(c_t), c_{t-1}] (6H), slopes of [i, f, g, o, tanh(c_t)] (5H).
RecurrentDims check_lstm_forward(bool pwl, const Tensor& x, const Tensor& h0, const Tensor& c0,
                                 const Tensor& w_ih, const Tensor& w_hh, const Tensor* bias,
                                 const Tensor* mask, const Tensor& y, const Tensor& h_n, const Tensor& c_n,
                                 const Tensor& xh, const Tensor& saved, const Tensor* slopes,
                                 const Tensor* preact) {
  return forward("lstm_forward", 4, 6, 5, pwl, x, h0, &c0, w_ih, w_hh, bias, mask, y, h_n, &c_n, xh, saved,
                 slopes, preact);
}

RecurrentDims check_lstm_backward(bool pwl, const Tensor& w_ih, const Tensor& w_hh, const Tensor& xh,
                                  const Tensor& saved, const Tensor* slopes, const Tensor* gy,
                                  const Tensor* gh_n, const Tensor* gc_n, const Tensor* mask,
                                  const Tensor* dx, const Tensor* dw_ih, const Tensor* dw_hh,
                                  const Tensor* dbias, const Tensor& dh0, const Tensor& dc0) {
  return backward("lstm_backward", 4, 6, 5, pwl, w_ih, w_hh, xh, saved, slopes, gy, gh_n, gc_n, mask, dx,
                  dw_ih, dw_hh, dbias, dh0, &dc0);
}

// GRU: saved [r, z, n, a_nh, d] (5H), slopes of [r, z, n] (3H).
RecurrentDims check_gru_forward(bool pwl, const Tensor& x, const Tensor& h0, const Tensor& w_ih,
                                const Tensor& w_hh, const Tensor* bias, const Tensor* mask, const Tensor& y,
                                const Tensor& h_n, const Tensor& xh, const Tensor& saved,
                                const Tensor* slopes, const Tensor* preact) {
  return forward("gru_forward", 3, 5, 3, pwl, x, h0, nullptr, w_ih, w_hh, bias, mask, y, h_n, nullptr, xh,
                 saved, slopes, preact);
}

RecurrentDims check_gru_backward(bool pwl, const Tensor& w_ih, const Tensor& w_hh, const Tensor& xh,
                                 const Tensor& saved, const Tensor* slopes, const Tensor* gy,
                                 const Tensor* gh_n, const Tensor* mask, const Tensor* dx,
                                 const Tensor* dw_ih, const Tensor* dw_hh, const Tensor* dbias,
                                 const Tensor& dh0) {
  return backward("gru_backward", 3, 5, 3, pwl, w_ih, w_hh, xh, saved, slopes, gy, gh_n, nullptr, mask, dx,
                  dw_ih, dw_hh, dbias, dh0, nullptr);
}

}  // namespace emu
