// max_pool2d, avg_pool2d and adaptive_avg_pool2d (forward and backward) on the CPU.
//
// Every pooling is described by one window table per axis (start and length of
// each output's window, numerics/pool_windows.h's definitions, shared with the
// CUDA kernels); average and adaptive pooling differ only in the tables.
// Window sums and gradient sums are the reduction of numerics/mac.h (mul exact,
// b = 1), terms in ascending order; see core/backend_ops_nn.h for the
// arithmetic and docs/layers_nn.md for the choices.
#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/reduce_arith.h"
#include "core/pool_checks.h"
#include "numerics/fast_round.h"
#include "numerics/philox.h"
#include "numerics/pool_windows.h"

namespace emu {
namespace {

using namespace cpu_reduce;  // NOLINT: the shared helpers of reduce_arith.h

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
};

// The window tables of a checked pooling (core/pool_checks.h).
Pool tables(const PoolShape& s) { return Pool{s.N, s.C, axis_table(s.h), axis_table(s.w)}; }

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
  const Pool pl = tables(check_max_pool2d_forward(pp, x, y, argmax));
  const Tensor X = x.contiguous();
  const float* xp = X.data();
  float* yp = y.data();
  float* ap = argmax.data();
  const Rounder r(out, nn_stage_key(key, 0));
  const int64_t OW = pl.w.out(), W = pl.w.in;
  // Each window clipped to the input (padding is never a candidate), per axis.
  std::vector<int64_t> h_lo(static_cast<size_t>(pl.h.out())), h_hi(h_lo.size());
  std::vector<int64_t> w_lo(static_cast<size_t>(OW)), w_hi(w_lo.size());
  for (int64_t oh = 0; oh < pl.h.out(); ++oh) {
    h_lo[oh] = std::max<int64_t>(pl.h.start[oh], 0);
    h_hi[oh] = std::min(pl.h.in, pl.h.start[oh] + pl.h.len[oh]);
  }
  for (int64_t ow = 0; ow < OW; ++ow) {
    w_lo[ow] = std::max<int64_t>(pl.w.start[ow], 0);
    w_hi[ow] = std::min(W, pl.w.start[ow] + pl.w.len[ow]);
  }
  parallel_for(pl.planes() * pl.h.out(), threads_, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t plane = row / pl.h.out(), oh = row % pl.h.out();
      const float* xpl = xp + plane * pl.in_plane();
      const int64_t ih0 = h_lo[oh], ih1 = h_hi[oh];
      for (int64_t ow = 0; ow < OW; ++ow) {
        float best = 0.0f;
        int64_t at = -1;
        for (int64_t ih = ih0; ih < ih1; ++ih)
          for (int64_t iw = w_lo[ow]; iw < w_hi[ow]; ++iw) {
            const float v = xpl[ih * W + iw];
            if (max_pool_takes(at < 0, best, v)) {
              best = v;
              at = ih * W + iw;
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
  const Pool pl = tables(check_max_pool2d_backward(pp, gy, argmax, gx));
  const Tensor GY = gy.contiguous(), AM = argmax.contiguous();
  const float* gp = GY.data();
  const float* ap = AM.data();
  float* xp = gx.data();
  const int64_t kmax = pl.h.max_cover * pl.w.max_cover;
  const uint64_t sites = mac_site_count(kmax, p.chunk);
  const Reducer sum(p, true, kmax);
  const Round out(p.out);
  const int64_t W = pl.w.in, OW = pl.w.out();
  // An input that no covering window's argmax names sums k zero terms. Neither
  // that sum nor its rounding to out depends on the input (no term is rounded,
  // and an exact zero rounds to itself whatever the draw): both are computed
  // once per k, and only the inputs some argmax names (one in four under 2x2
  // windows of stride 2) run the reduction.
  std::vector<double> zero_sum(static_cast<size_t>(kmax) + 1);
  std::vector<float> zero_result(static_cast<size_t>(kmax) + 1);
  {
    const std::vector<float> zeros(static_cast<size_t>(kmax), 0.0f);
    for (int64_t k = 0; k <= kmax; ++k) {
      zero_sum[k] = sum.run(zeros.data(), nullptr, k, key, 0, sites);
      zero_result[k] = finish_sum(out, p.chunk, zero_sum[k], k, key, 0, sites);
    }
  }
  // Every input's value where no argmax names it, one plane (the same for every plane).
  std::vector<float> zero_plane(static_cast<size_t>(pl.in_plane()));
  for (int64_t ih = 0; ih < pl.h.in; ++ih) {
    const size_t kh = pl.h.cover[ih].size();
    for (int64_t iw = 0; iw < W; ++iw) zero_plane[ih * W + iw] = zero_result[kh * pl.w.cover[iw].size()];
  }
  // Planes worth a thread (an empty plane, H or W 0 with padding, counts as one input).
  const int64_t min_planes = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(pl.in_plane(), 1));
  parallel_for(pl.planes(), threads_, min_planes, [&](int64_t plane0, int64_t plane1) {
    std::vector<float> terms(static_cast<size_t>(kmax));
    for (int64_t plane = plane0; plane < plane1; ++plane) {
      const float* gpl = gp + plane * pl.out_plane();
      const float* apl = ap + plane * pl.out_plane();
      float* xpl = xp + plane * pl.in_plane();
      const uint64_t i0 = static_cast<uint64_t>(plane * pl.in_plane());
      // gx[i] = R_out(sum over the outputs covering i, ascending, of (argmax[o] == i ? gy[o] : 0)).
      auto gradient = [&](int64_t ih, int64_t iw) {
        const float here = static_cast<float>(ih * W + iw);
        const uint64_t i = i0 + static_cast<uint64_t>(ih * W + iw);
        int64_t k = 0;
        bool named = false;
        for (int64_t oh : pl.h.cover[ih])
          for (int64_t ow : pl.w.cover[iw]) {
            const int64_t o = oh * OW + ow;
            named |= apl[o] == here;
            terms[k++] = apl[o] == here ? gpl[o] : 0.0f;
          }
        const double s = named ? sum.run(terms.data(), nullptr, k, key, i, sites) : zero_sum[k];
        return finish_sum(out, p.chunk, s, k, key, i, sites);
      };
      std::copy_n(zero_plane.data(), pl.in_plane(), xpl);
      // The inputs an argmax names (an index of this plane, each a distinct binary32 below 2^24:
      // core/pool_checks; anything else names none) get their sums.
      for (int64_t o = 0; o < pl.out_plane(); ++o) {
        const float a = apl[o];
        if (!(a >= 0.0f && a < static_cast<float>(pl.in_plane())) || a != std::floor(a)) continue;
        const int64_t at = static_cast<int64_t>(a);
        xpl[at] = gradient(at / W, at % W);
      }
    }
  });
}

// x (N,C,H,W) -> y (N,C,OH,OW)
void CpuBackend::avg_pool2d_forward(const MacPolicy& p, const Pool2dParams& pp, const Tensor& x, Tensor& y,
                                    DrawKey key) {
  const Pool pl = tables(check_avg_pool2d_forward(pp, x, y));
  const Tensor X = x.contiguous();
  avg_forward(p, pl, X.data(), y.data(), key, threads_);
}

// gy (N,C,OH,OW) -> gx (N,C,H,W)
void CpuBackend::avg_pool2d_backward(const MacPolicy& p, const Pool2dParams& pp, const Tensor& gy, Tensor& gx,
                                     DrawKey key) {
  const Pool pl = tables(check_avg_pool2d_backward(pp, gy, gx));
  const Tensor GY = gy.contiguous();
  avg_backward(p, pl, GY.data(), gx.data(), key, threads_);
}

// x (N,C,H,W) -> y (N,C,OH,OW)
void CpuBackend::adaptive_avg_pool2d_forward(const MacPolicy& p, const Tensor& x, Tensor& y, DrawKey key) {
  const Pool pl = tables(check_adaptive_avg_pool2d_forward(x, y));
  const Tensor X = x.contiguous();
  avg_forward(p, pl, X.data(), y.data(), key, threads_);
}

// gy (N,C,OH,OW) -> gx (N,C,H,W)
void CpuBackend::adaptive_avg_pool2d_backward(const MacPolicy& p, const Tensor& gy, Tensor& gx, DrawKey key) {
  const Pool pl = tables(check_adaptive_avg_pool2d_backward(gy, gx));
  const Tensor GY = gy.contiguous();
  avg_backward(p, pl, GY.data(), gx.data(), key, threads_);
}

}  // namespace emu
