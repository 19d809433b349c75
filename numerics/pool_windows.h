// The windows of the pooling ops (core/backend_ops_nn.h), host+device: which
// input positions each output reads, which outputs read each input (the terms
// of a backward sum, in the canonical ascending order), and the max-pool rule.
// The CPU (backends/cpu/pool_ops.cpp) builds its window tables from these
// definitions; the CUDA kernels (backends/cuda/ops/pool.cu) call them per
// thread. Integer arithmetic only, so both give the same windows.
#pragma once

#include <cstdint>

#include "numerics/hd.h"

namespace emu {

// The windows along one axis of `in` positions and `out` outputs: output o covers
// positions start(o) .. start(o) + len(o) - 1, some of which may be padding
// (outside [0, in)). Strided (kernel, stride, pad): start = o*stride - pad, len =
// kernel. Adaptive (PyTorch's windows): start = floor(o*in/out), end =
// ceil((o+1)*in/out). In both, start and end never decrease with o, so the
// outputs covering one position are a range (cover_first .. cover_last).
struct PoolAxis {
  int64_t in = 0, out = 0;
  bool adaptive = false;
  int64_t kernel = 1, stride = 1, pad = 0;  // strided windows only

  EMU_HD int64_t start(int64_t o) const { return adaptive ? o * in / out : o * stride - pad; }
  EMU_HD int64_t len(int64_t o) const {
    return adaptive ? ((o + 1) * in + out - 1) / out - o * in / out : kernel;
  }
  // The first and last output whose window covers position i (0 <= i < in);
  // first > last when none does.
  //   strided: o*stride - pad <= i  <=>  o <= (i + pad) / stride, and
  //            i < o*stride - pad + kernel  <=>  o > (i + pad - kernel) / stride (floor);
  //   adaptive: floor(o*in/out) <= i  <=>  o*in < (i+1)*out  <=>  o <= ceil((i+1)*out/in) - 1, and
  //            ceil((o+1)*in/out) > i  <=>  (o+1)*in > i*out  <=>  o >= floor(i*out/in).
  EMU_HD int64_t cover_first(int64_t i) const {
    if (adaptive) return i * out / in;
    const int64_t lo = i + pad - kernel;  // may be negative: every output from 0 then
    return lo < 0 ? 0 : lo / stride + 1;
  }
  EMU_HD int64_t cover_last(int64_t i) const {
    const int64_t hi = adaptive ? ((i + 1) * out + in - 1) / in - 1 : (i + pad) / stride;
    return hi < out - 1 ? hi : out - 1;
  }
  EMU_HD int64_t cover_count(int64_t i) const {
    const int64_t n = cover_last(i) - cover_first(i) + 1;
    return n > 0 ? n : 0;
  }
};

// The strided axis of a pooling with kernel, stride and padding over `in`
// positions: out = (in + 2 pad - kernel) / stride + 1 (floor; no ceil mode).
// The caller has checked in + 2 pad >= kernel and stride >= 1.
EMU_HD PoolAxis strided_pool_axis(int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  PoolAxis a;
  a.in = in;
  a.out = (in + 2 * pad - kernel) / stride + 1;
  a.kernel = kernel;
  a.stride = stride;
  a.pad = pad;
  return a;
}

// The adaptive axis of `in` positions pooled to `out` (both >= 1).
EMU_HD PoolAxis adaptive_pool_axis(int64_t in, int64_t out) {
  PoolAxis a;
  a.in = in;
  a.out = out;
  a.adaptive = true;
  return a;
}

// Max pooling visits the window's positions in row-major order; value v at a
// later position replaces the best so far when this is true: the first
// position always, then strictly greater values (ties keep the first index) or
// a NaN, and nothing replaces a NaN (the first NaN wins).
EMU_HD bool max_pool_takes(bool first, float best, float v) {
  return first || (best == best && (v > best || v != v));
}

}  // namespace emu
