// max_pool2d, avg_pool2d and adaptive_avg_pool2d (forward and backward) on the CPU.
//
// Every pooling is described by one window table per axis (start and length of
// each output's window, numerics/pool_windows.h's definitions, shared with the
// CUDA kernels); average and adaptive pooling differ only in the tables.
// Window sums and gradient sums are the reduction of numerics/mac.h (mul exact,
// b = 1), terms in ascending order; see core/backend_ops_nn.h for the
// arithmetic and docs/layers_nn.md for the choices.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/op_checks.h"
#include "backends/cpu/reduce_arith.h"
#include "numerics/fast_round.h"
#include "numerics/philox.h"
#include "numerics/pool_windows.h"

namespace emu {
namespace {

using namespace cpu_reduce;  // NOLINT: the shared helpers of reduce_arith.h
using cpu_checks::check_result;

// R_out of a sum of K terms, at the output site of mac_reduce (2K + chunks + 1).
float finish_sum(const Round& out, int chunk, double v, int64_t K, DrawKey key, uint64_t o, uint64_t sites) {
  if (is_plain_fp32(out.format()) && is_binary32(v)) return static_cast<float>(v);
  const uint64_t chunks = chunk > 0 && K > 0 ? static_cast<uint64_t>((K + chunk - 1) / chunk) : 1;
  const uint32_t r =
      is_stochastic(out.format())
          ? philox_draw(key.seed, key.stream, o * sites + 2 * static_cast<uint64_t>(K) + chunks + 1)
          : 0;
  return static_cast<float>(out(v, r));
}

// The windows along one axis: output o covers input positions start[o] .. start[o] + len[o] - 1
// (positions outside [0, in) are padding).
struct Axis {
  int64_t in = 0;
  std::vector<int64_t> start, len;
  int64_t max_len = 0;
  // Backward: for input position i, the outputs whose windows cover it, ascending.
  std::vector<std::vector<int64_t>> cover;
  int64_t max_cover = 0;

  int64_t out() const { return static_cast<int64_t>(start.size()); }
  void finish() {
    max_len = 0;
    for (int64_t l : len) max_len = std::max(max_len, l);
    cover.assign(static_cast<size_t>(in), {});
    for (int64_t o = 0; o < out(); ++o)
      for (int64_t i = std::max<int64_t>(start[o], 0); i < std::min(in, start[o] + len[o]); ++i)
        cover[i].push_back(o);
    max_cover = 0;
    for (auto& c : cover) max_cover = std::max<int64_t>(max_cover, static_cast<int64_t>(c.size()));
  }
};

// The table of an axis's windows. The covering outputs are found by scanning
// the windows, independently of PoolAxis's closed forms (which the CUDA kernels
// use), so `emutrain validate` compares the two.
Axis axis_table(const PoolAxis& pa) {
  Axis a;
  a.in = pa.in;
  for (int64_t o = 0; o < pa.out; ++o) {
    a.start.push_back(pa.start(o));
    a.len.push_back(pa.len(o));
  }
  a.finish();
  return a;
}

struct Pool {
  int64_t N, C;
  Axis h, w;
  int64_t planes() const { return N * C; }
  int64_t in_plane() const { return h.in * w.in; }
  int64_t out_plane() const { return h.out() * w.out(); }
  Shape in_shape() const { return {N, C, h.in, w.in}; }
  Shape out_shape() const { return {N, C, h.out(), w.out()}; }
};

void check_4d(const char* op, const char* what, const Tensor& t) {
  if (t.ndim() != 4)
    throw std::invalid_argument(
        fmt::format("{}: {} must be (N, C, H, W), got {}", op, what, shape_string(t.shape())));
}

// The strided pooling over an input of `in` shape (N, C, H, W).
Pool strided_pool(const char* op, const Pool2dParams& pp, const Shape& in) {
  if (pp.kernel_h < 1 || pp.kernel_w < 1 || pp.stride_h < 1 || pp.stride_w < 1 || pp.pad_h < 0 ||
      pp.pad_w < 0 || 2 * pp.pad_h > pp.kernel_h || 2 * pp.pad_w > pp.kernel_w)
    throw std::invalid_argument(
        fmt::format("{}: kernel {}x{}, stride {}x{}, padding {}x{}: kernel and stride must be "
                    ">= 1, padding >= 0 and at most half the kernel",
                    op, pp.kernel_h, pp.kernel_w, pp.stride_h, pp.stride_w, pp.pad_h, pp.pad_w));
  if (in[2] + 2 * pp.pad_h - pp.kernel_h < 0 || in[3] + 2 * pp.pad_w - pp.kernel_w < 0)
    throw std::invalid_argument(fmt::format("{}: kernel {}x{} larger than the padded input {}", op,
                                            pp.kernel_h, pp.kernel_w, shape_string(in)));
  return Pool{in[0], in[1], axis_table(strided_pool_axis(in[2], pp.kernel_h, pp.stride_h, pp.pad_h)),
              axis_table(strided_pool_axis(in[3], pp.kernel_w, pp.stride_w, pp.pad_w))};
}

Pool adaptive_pool(const char* op, const Shape& in, const Shape& out) {
  if (in[0] != out[0] || in[1] != out[1] || in[2] < 1 || in[3] < 1 || out[2] < 1 || out[3] < 1)
    throw std::invalid_argument(
        fmt::format("{}: input {} and output {} do not fit", op, shape_string(in), shape_string(out)));
  return Pool{in[0], in[1], axis_table(adaptive_pool_axis(in[2], out[2])),
              axis_table(adaptive_pool_axis(in[3], out[3]))};
}

// y (planes, OH, OW) = R_out(window sum / window size).
void avg_forward(const MacPolicy& p, const Pool& pl, const float* x, float* y, DrawKey key, int threads) {
  const int64_t kmax = pl.h.max_len * pl.w.max_len;
  const uint64_t sites = mac_site_count(kmax, p.chunk);
  const Reducer sum(p, true, kmax);
  const Rounder out(p.out, nn_stage_key(key, 1));
  const int64_t OW = pl.w.out();
  parallel_for(pl.planes() * pl.h.out(), threads, 16, [&](int64_t r0, int64_t r1) {
    std::vector<float> terms(static_cast<size_t>(kmax));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / pl.h.out(), oh = r % pl.h.out();
      const float* xp = x + plane * pl.in_plane();
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t o = r * OW + ow;
        int64_t k = 0;
        for (int64_t i = 0; i < pl.h.len[oh]; ++i) {
          const int64_t ih = pl.h.start[oh] + i;
          for (int64_t j = 0; j < pl.w.len[ow]; ++j, ++k) {
            const int64_t iw = pl.w.start[ow] + j;
            terms[k] = ih >= 0 && ih < pl.h.in && iw >= 0 && iw < pl.w.in ? xp[ih * pl.w.in + iw] : 0.0f;
          }
        }
        const double s = sum.run(terms.data(), nullptr, k, key, static_cast<uint64_t>(o), sites);
        y[o] = out.div(s, static_cast<double>(k), static_cast<uint64_t>(o));
      }
    }
  });
}

// gx (planes, H, W) = R_out(sum over covering outputs of R_out(gy / window size)).
void avg_backward(const MacPolicy& p, const Pool& pl, const float* gy, float* gx, DrawKey key, int threads) {
  const int64_t kmax = pl.h.max_cover * pl.w.max_cover;
  const uint64_t sites = mac_site_count(kmax, p.chunk);
  const Reducer sum(p, true, kmax);
  const Round out(p.out);
  const Rounder quotient(p.out, nn_stage_key(key, 0));
  const DrawKey sum_key = nn_stage_key(key, 1);
  std::vector<float> q(static_cast<size_t>(pl.planes() * pl.out_plane()));
  const int64_t OW = pl.w.out();
  parallel_for(static_cast<int64_t>(q.size()), threads, 4096, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t oh = o / OW % pl.h.out(), ow = o % OW;
      q[o] = quotient.div(gy[o], static_cast<double>(pl.h.len[oh] * pl.w.len[ow]), static_cast<uint64_t>(o));
    }
  });
  parallel_for(pl.planes() * pl.h.in, threads, 16, [&](int64_t r0, int64_t r1) {
    std::vector<float> terms(static_cast<size_t>(kmax));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / pl.h.in, ih = r % pl.h.in;
      const float* qp = q.data() + plane * pl.out_plane();
      for (int64_t iw = 0; iw < pl.w.in; ++iw) {
        const int64_t i = r * pl.w.in + iw;
        int64_t k = 0;
        for (int64_t oh : pl.h.cover[ih])
          for (int64_t ow : pl.w.cover[iw]) terms[k++] = qp[oh * OW + ow];
        const double s = sum.run(terms.data(), nullptr, k, sum_key, static_cast<uint64_t>(i), sites);
        gx[i] = finish_sum(out, p.chunk, s, k, sum_key, static_cast<uint64_t>(i), sites);
      }
    }
  });
}

}  // namespace

// x (N,C,H,W) -> y (N,C,OH,OW), argmax (N,C,OH,OW)
void CpuBackend::max_pool2d_forward(const Format& out, const Pool2dParams& pp, const Tensor& x, Tensor& y,
                                    Tensor& argmax, DrawKey key) {
  const char* op = "max_pool2d_forward";
  check_4d(op, "x", x);
  const Pool pl = strided_pool(op, pp, x.shape());
  if (pl.in_plane() >= (int64_t{1} << 24))
    throw std::invalid_argument(
        fmt::format("{}: planes of {} elements: argmax indices must stay below 2^24", op, pl.in_plane()));
  check_result(op, "y", y, pl.out_shape());
  check_result(op, "argmax", argmax, pl.out_shape());
  const Tensor X = x.contiguous();
  const float* xp = X.data();
  float* yp = y.data();
  float* ap = argmax.data();
  const Rounder r(out, nn_stage_key(key, 0));
  const int64_t OW = pl.w.out();
  parallel_for(pl.planes() * pl.h.out(), threads_, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t plane = row / pl.h.out(), oh = row % pl.h.out();
      const float* xpl = xp + plane * pl.in_plane();
      for (int64_t ow = 0; ow < OW; ++ow) {
        float best = 0.0f;
        int64_t at = -1;
        for (int64_t ih = std::max<int64_t>(pl.h.start[oh], 0);
             ih < std::min(pl.h.in, pl.h.start[oh] + pl.h.len[oh]); ++ih)
          for (int64_t iw = std::max<int64_t>(pl.w.start[ow], 0);
               iw < std::min(pl.w.in, pl.w.start[ow] + pl.w.len[ow]); ++iw) {
            const float v = xpl[ih * pl.w.in + iw];
            if (max_pool_takes(at < 0, best, v)) {
              best = v;
              at = ih * pl.w.in + iw;
            }
          }
        const int64_t o = row * OW + ow;
        yp[o] = r.round(best, static_cast<uint64_t>(o));
        ap[o] = static_cast<float>(at);
      }
    }
  });
}

// gy (N,C,OH,OW), argmax (N,C,OH,OW) -> gx (N,C,H,W)
void CpuBackend::max_pool2d_backward(const MacPolicy& p, const Pool2dParams& pp, const Tensor& gy,
                                     const Tensor& argmax, Tensor& gx, DrawKey key) {
  const char* op = "max_pool2d_backward";
  check_4d(op, "gx", gx);
  const Pool pl = strided_pool(op, pp, gx.shape());
  check_result(op, "gx", gx, pl.in_shape());
  if (gy.shape() != pl.out_shape() || argmax.shape() != pl.out_shape())
    throw std::invalid_argument(fmt::format("{}: gy {} and argmax {} must be {}", op,
                                            shape_string(gy.shape()), shape_string(argmax.shape()),
                                            shape_string(pl.out_shape())));
  const Tensor GY = gy.contiguous(), AM = argmax.contiguous();
  const float* gp = GY.data();
  const float* ap = AM.data();
  float* xp = gx.data();
  const int64_t kmax = pl.h.max_cover * pl.w.max_cover;
  const uint64_t sites = mac_site_count(kmax, p.chunk);
  const Reducer sum(p, true, kmax);
  const Round out(p.out);
  const int64_t OW = pl.w.out();
  parallel_for(pl.planes() * pl.h.in, threads_, 16, [&](int64_t r0, int64_t r1) {
    std::vector<float> terms(static_cast<size_t>(kmax));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / pl.h.in, ih = r % pl.h.in;
      const float* gpl = gp + plane * pl.out_plane();
      const float* apl = ap + plane * pl.out_plane();
      for (int64_t iw = 0; iw < pl.w.in; ++iw) {
        const float here = static_cast<float>(ih * pl.w.in + iw);
        const int64_t i = r * pl.w.in + iw;
        int64_t k = 0;
        for (int64_t oh : pl.h.cover[ih])
          for (int64_t ow : pl.w.cover[iw]) {
            const int64_t o = oh * OW + ow;
            terms[k++] = apl[o] == here ? gpl[o] : 0.0f;
          }
        const double s = sum.run(terms.data(), nullptr, k, key, static_cast<uint64_t>(i), sites);
        xp[i] = finish_sum(out, p.chunk, s, k, key, static_cast<uint64_t>(i), sites);
      }
    }
  });
}

// x (N,C,H,W) -> y (N,C,OH,OW)
void CpuBackend::avg_pool2d_forward(const MacPolicy& p, const Pool2dParams& pp, const Tensor& x, Tensor& y,
                                    DrawKey key) {
  const char* op = "avg_pool2d_forward";
  check_4d(op, "x", x);
  const Pool pl = strided_pool(op, pp, x.shape());
  check_result(op, "y", y, pl.out_shape());
  const Tensor X = x.contiguous();
  avg_forward(p, pl, X.data(), y.data(), key, threads_);
}

// gy (N,C,OH,OW) -> gx (N,C,H,W)
void CpuBackend::avg_pool2d_backward(const MacPolicy& p, const Pool2dParams& pp, const Tensor& gy, Tensor& gx,
                                     DrawKey key) {
  const char* op = "avg_pool2d_backward";
  check_4d(op, "gx", gx);
  const Pool pl = strided_pool(op, pp, gx.shape());
  check_result(op, "gx", gx, pl.in_shape());
  if (gy.shape() != pl.out_shape())
    throw std::invalid_argument(
        fmt::format("{}: gy {} must be {}", op, shape_string(gy.shape()), shape_string(pl.out_shape())));
  const Tensor GY = gy.contiguous();
  avg_backward(p, pl, GY.data(), gx.data(), key, threads_);
}

// x (N,C,H,W) -> y (N,C,OH,OW)
void CpuBackend::adaptive_avg_pool2d_forward(const MacPolicy& p, const Tensor& x, Tensor& y, DrawKey key) {
  const char* op = "adaptive_avg_pool2d_forward";
  check_4d(op, "x", x);
  check_4d(op, "y", y);
  const Pool pl = adaptive_pool(op, x.shape(), y.shape());
  check_result(op, "y", y, pl.out_shape());
  const Tensor X = x.contiguous();
  avg_forward(p, pl, X.data(), y.data(), key, threads_);
}

// gy (N,C,OH,OW) -> gx (N,C,H,W)
void CpuBackend::adaptive_avg_pool2d_backward(const MacPolicy& p, const Tensor& gy, Tensor& gx, DrawKey key) {
  const char* op = "adaptive_avg_pool2d_backward";
  check_4d(op, "gy", gy);
  check_4d(op, "gx", gx);
  const Pool pl = adaptive_pool(op, gx.shape(), gy.shape());
  check_result(op, "gx", gx, pl.in_shape());
  const Tensor GY = gy.contiguous();
  avg_backward(p, pl, GY.data(), gx.data(), key, threads_);
}

}  // namespace emu
