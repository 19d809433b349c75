// Op family: tensor memory. Everything outside backends/ that reads or writes
// tensor data does it through these ops (or the arithmetic ops), so a tensor can
// live on any device (docs/devices.md). Views are any strided view (offset,
// strides, shape); the logical element order is row-major over the view's shape.
#pragma once

#include <cstdint>

// copy:            src -> dst, same shape, any strides, both on this backend's device; dst's elements
//                  get src's bits (NaN payloads, signed zeros). src and dst may share storage only when
//                  they are the same view (a no-op then).
// fill:            y: any view; every element = value (its bits).
// upload:          host: numel(dst) binary32 values in row-major order, in CPU memory -> dst (any strides).
// download:        src (any strides) -> host: numel(src) values in row-major order, in CPU memory.
// accumulate:      acc += g element-wise, one binary32 addition each, rounded to nearest even, never fused
//                  (autograd's gradient accumulation); same shape, any strides, acc and g distinct.
// sum_squares:     *sum += x_i * x_i for every element in row-major order, each product exact in binary64
//                  (a binary32 square fits), each addition one binary64 addition in that order: the
//                  gradient norm of clip_grad_norm, continued across tensors through *sum (host memory).
// count_nonfinite: *count = the number of NaN and +-Inf elements of x (host memory).
#define EMU_OPS_MEMORY(X)                                    \
  X(copy, (const Tensor& src, Tensor& dst), (src, dst))      \
  X(fill, (Tensor & y, float value), (y, value))             \
  X(upload, (const float* host, Tensor& dst), (host, dst))   \
  X(download, (const Tensor& src, float* host), (src, host)) \
  X(accumulate, (Tensor & acc, const Tensor& g), (acc, g))   \
  X(sum_squares, (const Tensor& x, double* sum), (x, sum))   \
  X(count_nonfinite, (const Tensor& x, int64_t* count), (x, count))
