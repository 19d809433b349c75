// Max, average and adaptive average pooling on the device (EMU_OPS_POOL,
// core/backend_ops_nn.h), with the windows of numerics/pool_windows.h and the
// reductions and roundings of numerics/stage_round.h, the CPU's definitions
// (backends/cpu/pool_ops.cpp).
//
// One thread per output: a pooled value's window, or an input gradient's sum
// over the windows covering it, runs term by term in the canonical order (window
// positions row-major; covering outputs ascending by (oh, ow)) on that thread,
// since that order is the sum's definition (numerics/mac.h). Windows are short
// (at most KH*KW terms) and outputs many, so one chain per output keeps the GPU
// busy without splitting a chain; a chunked policy's runs stay on the chain's
// thread (numerics/norm_chunks.h splits the long batch-norm sums instead). The
// element-wise quotients of the average backward run one thread per element.
// Every rounding draws at the CPU's index: a reduction of output o at
// o * mac_site_count(kmax, chunk) + site (kmax: the largest window, or the most
// windows covering one input), an element-wise step at its element, each on its
// stage's stream. No atomics: every output is written by its own thread.
#include <algorithm>

#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/scratch.h"
#include "core/pool_checks.h"
#include "numerics/mac.h"
#include "numerics/pool_windows.h"
#include "numerics/row_reduce.h"
#include "numerics/stage_round.h"

namespace emu::EMU_CUDA_NS {
namespace {

// The windows of one pooling of (planes = N*C) planes.
struct PoolGeometry {
  int64_t planes = 0;
  PoolAxis h, w;
  EMU_HD int64_t in_plane() const { return h.in * w.in; }
  EMU_HD int64_t out_plane() const { return h.out * w.out; }
};

// The largest window along an axis (the K of the forward's draw numbering).
int64_t max_window(const PoolAxis& a) {
  int64_t m = 0;
  for (int64_t o = 0; o < a.out; ++o) m = std::max(m, a.len(o));
  return m;
}

// The most outputs covering one input position (the K of the backward's draw numbering).
int64_t max_cover(const PoolAxis& a) {
  int64_t m = 0;
  for (int64_t i = 0; i < a.in; ++i) m = std::max(m, a.cover_count(i));
  return m;
}

// The policy of a sum rounded to p.out (the gradient sums: mul exact, every b = 1),
// and whether native binary32 additions give its bits (acc and out fp32, no chunks).
MacPolicy rounded_sum_policy(const MacPolicy& p) {
  MacPolicy s = unfused(p);  // a sum (docs/contract.md section 4.7): never fused
  s.mul_exact = true;
  return s;
}
bool rounded_sum_native(const MacPolicy& p) { return native_sum(p) && is_plain_fp32(p.out); }

// y[o] = R_out(max of o's window), argmax[o] = ih*W + iw of the value taken (stage 0, index o);
// one thread per output.
__global__ void max_pool_forward_kernel(PoolGeometry g, StageRound r, const float* x, float* y,
                                        float* argmax) {
  const int64_t n = g.planes * g.out_plane();
  EMU_GRID_STRIDE_LOOP(o, n) {
    const int64_t plane = o / g.out_plane(), oh = o / g.w.out % g.h.out, ow = o % g.w.out;
    const float* xp = x + plane * g.in_plane();
    const int64_t h0 = g.h.start(oh), w0 = g.w.start(ow);
    const int64_t h_lo = h0 > 0 ? h0 : 0, h_hi = h0 + g.h.len(oh) < g.h.in ? h0 + g.h.len(oh) : g.h.in;
    const int64_t w_lo = w0 > 0 ? w0 : 0, w_hi = w0 + g.w.len(ow) < g.w.in ? w0 + g.w.len(ow) : g.w.in;
    float best = 0.0f;
    int64_t at = -1;
    for (int64_t ih = h_lo; ih < h_hi; ++ih)
      for (int64_t iw = w_lo; iw < w_hi; ++iw) {
        const float v = xp[ih * g.w.in + iw];
        if (max_pool_takes(at < 0, best, v)) {
          best = v;
          at = ih * g.w.in + iw;
        }
      }
    y[o] = r.round(best, static_cast<uint64_t>(o));
    argmax[o] = static_cast<float>(at);
  }
}

// gx[i] = R_out(sum over the outputs o covering i, ascending, of (argmax[o] == i ? gy[o] : 0)), draws on
// key's stream at i * sites; one thread per input element.
__global__ void max_pool_backward_kernel(PoolGeometry g, MacRounding sum, bool native, const float* gy,
                                         const float* argmax, float* gx, uint64_t sites, DrawKey key) {
  const int64_t n = g.planes * g.in_plane();
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t plane = i / g.in_plane(), ih = i / g.w.in % g.h.in, iw = i % g.w.in;
    const float* gp = gy + plane * g.out_plane();
    const float* ap = argmax + plane * g.out_plane();
    const float here = static_cast<float>(ih * g.w.in + iw);
    const int64_t oh0 = g.h.cover_first(ih), ow0 = g.w.cover_first(iw), nw = g.w.cover_count(iw);
    const int64_t K = g.h.cover_count(ih) * nw;
    const RowDraws draws{key.seed, key.stream, static_cast<uint64_t>(i) * sites};
    gx[i] = static_cast<float>(reduce_terms(
        sum, native, K,
        [&](int64_t k, float* a, float* b) {
          const int64_t o = (oh0 + k / nw) * g.w.out + ow0 + k % nw;
          *a = ap[o] == here ? gp[o] : 0.0f;
          *b = 1.0f;
        },
        draws));
  }
}

// y[o] = R_out(S / window size), S the window's sum left in the accumulator (padding positions
// zero terms; draws on stage 0 at o * sites), the quotient on stage 1 at index o; one thread per output.
__global__ void avg_pool_forward_kernel(PoolGeometry g, MacRounding sum, bool native, StageRound quotient,
                                        const float* x, float* y, uint64_t sites, DrawKey key) {
  const int64_t n = g.planes * g.out_plane();
  EMU_GRID_STRIDE_LOOP(o, n) {
    const int64_t plane = o / g.out_plane(), oh = o / g.w.out % g.h.out, ow = o % g.w.out;
    const float* xp = x + plane * g.in_plane();
    const int64_t h0 = g.h.start(oh), w0 = g.w.start(ow), lw = g.w.len(ow);
    const int64_t K = g.h.len(oh) * lw;
    const RowDraws draws{key.seed, key.stream, static_cast<uint64_t>(o) * sites};
    const double s = reduce_terms(
        sum, native, K,
        [&](int64_t k, float* a, float* b) {
          const int64_t ih = h0 + k / lw, iw = w0 + k % lw;
          *a = ih >= 0 && ih < g.h.in && iw >= 0 && iw < g.w.in ? xp[ih * g.w.in + iw] : 0.0f;
          *b = 1.0f;
        },
        draws);
    y[o] = quotient.div(s, static_cast<double>(K), static_cast<uint64_t>(o));
  }
}

// q[o] = R_out(gy[o] / window size) (stage 0, index o); one thread per output.
__global__ void avg_pool_quotient_kernel(PoolGeometry g, StageRound quotient, const float* gy, float* q) {
  const int64_t n = g.planes * g.out_plane();
  EMU_GRID_STRIDE_LOOP(o, n) {
    const int64_t oh = o / g.w.out % g.h.out, ow = o % g.w.out;
    q[o] = quotient.div(gy[o], static_cast<double>(g.h.len(oh) * g.w.len(ow)), static_cast<uint64_t>(o));
  }
}

// gx[i] = R_out(sum over the outputs o covering i, ascending, of q[o]) (draws on stage 1 at i * sites);
// one thread per input element.
__global__ void avg_pool_backward_kernel(PoolGeometry g, MacRounding sum, bool native, const float* q,
                                         float* gx, uint64_t sites, DrawKey key) {
  const int64_t n = g.planes * g.in_plane();
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t plane = i / g.in_plane(), ih = i / g.w.in % g.h.in, iw = i % g.w.in;
    const float* qp = q + plane * g.out_plane();
    const int64_t oh0 = g.h.cover_first(ih), ow0 = g.w.cover_first(iw), nw = g.w.cover_count(iw);
    const int64_t K = g.h.cover_count(ih) * nw;
    const RowDraws draws{key.seed, key.stream, static_cast<uint64_t>(i) * sites};
    gx[i] = static_cast<float>(reduce_terms(
        sum, native, K,
        [&](int64_t k, float* a, float* b) {
          *a = qp[(oh0 + k / nw) * g.w.out + ow0 + k % nw];
          *b = 1.0f;
        },
        draws));
  }
}

// The kernels' view of a pooling checked by core/pool_checks.h.
PoolGeometry geometry(const PoolShape& s) { return PoolGeometry{s.N * s.C, s.h, s.w}; }

// Average pooling forward over g: x (planes, H, W) -> y (planes, OH, OW).
void avg_forward(const MacPolicy& p, const PoolGeometry& g, const float* x, float* y, DrawKey key) {
  const MacPolicy sp = plain_sum_policy(p);
  const uint64_t sites = mac_site_count(max_window(g.h) * max_window(g.w), p.chunk);
  launch_each("avg_pool_forward_kernel", avg_pool_forward_kernel, g.planes * g.out_plane(), g,
              MacRounding(sp), native_sum(sp), StageRound(p.out, key.seed, nn_stage_key(key, 1).stream), x, y,
              sites, key);
}

// Average pooling backward over g: gy (planes, OH, OW) -> gx (planes, H, W).
void avg_backward(const MacPolicy& p, const PoolGeometry& g, const float* gy, float* gx, DrawKey key) {
  const int64_t outputs = g.planes * g.out_plane();
  DeviceArray<float> q(static_cast<size_t>(outputs));
  float* qp = q.get();
  launch_each("avg_pool_quotient_kernel", avg_pool_quotient_kernel, outputs, g,
              StageRound(p.out, key.seed, nn_stage_key(key, 0).stream), gy, qp);
  const MacPolicy sp = rounded_sum_policy(p);
  const uint64_t sites = mac_site_count(max_cover(g.h) * max_cover(g.w), p.chunk);
  launch_each("avg_pool_backward_kernel", avg_pool_backward_kernel, g.planes * g.in_plane(), g,
              MacRounding(sp), rounded_sum_native(p), static_cast<const float*>(qp), gx, sites,
              nn_stage_key(key, 1));
}

}  // namespace

// x (N,C,H,W) -> y (N,C,OH,OW), argmax (N,C,OH,OW)
void CudaBackend::max_pool2d_forward(const Format& out, const Pool2dParams& pp, const Tensor& x, Tensor& y,
                                     Tensor& argmax, DrawKey key) {
  OpScope scope("max_pool2d_forward");
  const PoolGeometry g = geometry(check_max_pool2d_forward(pp, x, y, argmax));
  const int64_t n = g.planes * g.out_plane();
  if (n == 0) return;
  const Tensor xc = x.contiguous();
  launch_each("max_pool_forward_kernel", max_pool_forward_kernel, n, g, StageRound(out, key.seed, key.stream),
              static_cast<const float*>(contiguous_data(xc, "x")), contiguous_data(y, "y"),
              contiguous_data(argmax, "argmax"));
}

// gy (N,C,OH,OW), argmax (N,C,OH,OW) -> gx (N,C,H,W)
void CudaBackend::max_pool2d_backward(const MacPolicy& p, const Pool2dParams& pp, const Tensor& gy,
                                      const Tensor& argmax, Tensor& gx, DrawKey key) {
  OpScope scope("max_pool2d_backward");
  const PoolGeometry g = geometry(check_max_pool2d_backward(pp, gy, argmax, gx));
  const int64_t n = g.planes * g.in_plane();
  if (n == 0) return;
  const Tensor gc = gy.contiguous(), ac = argmax.contiguous();
  const float* gp = contiguous_data(gc, "gy");
  const float* ap = contiguous_data(ac, "argmax");
  const uint64_t sites = mac_site_count(max_cover(g.h) * max_cover(g.w), p.chunk);
  launch_each("max_pool_backward_kernel", max_pool_backward_kernel, n, g, MacRounding(rounded_sum_policy(p)),
              rounded_sum_native(p), gp, ap, contiguous_data(gx, "gx"), sites, key);
}

// x (N,C,H,W) -> y (N,C,OH,OW)
void CudaBackend::avg_pool2d_forward(const MacPolicy& p, const Pool2dParams& pp, const Tensor& x, Tensor& y,
                                     DrawKey key) {
  OpScope scope("avg_pool2d_forward");
  const PoolGeometry g = geometry(check_avg_pool2d_forward(pp, x, y));
  if (g.planes * g.out_plane() == 0) return;
  const Tensor xc = x.contiguous();
  avg_forward(p, g, contiguous_data(xc, "x"), contiguous_data(y, "y"), key);
}

// gy (N,C,OH,OW) -> gx (N,C,H,W)
void CudaBackend::avg_pool2d_backward(const MacPolicy& p, const Pool2dParams& pp, const Tensor& gy,
                                      Tensor& gx, DrawKey key) {
  OpScope scope("avg_pool2d_backward");
  const PoolGeometry g = geometry(check_avg_pool2d_backward(pp, gy, gx));
  if (g.planes * g.in_plane() == 0) return;
  const Tensor gc = gy.contiguous();
  avg_backward(p, g, contiguous_data(gc, "gy"), contiguous_data(gx, "gx"), key);
}

// x (N,C,H,W) -> y (N,C,OH,OW), OH and OW from y
void CudaBackend::adaptive_avg_pool2d_forward(const MacPolicy& p, const Tensor& x, Tensor& y, DrawKey key) {
  OpScope scope("adaptive_avg_pool2d_forward");
  const PoolGeometry g = geometry(check_adaptive_avg_pool2d_forward(x, y));
  if (g.planes * g.out_plane() == 0) return;
  const Tensor xc = x.contiguous();
  avg_forward(p, g, contiguous_data(xc, "x"), contiguous_data(y, "y"), key);
}

// gy (N,C,OH,OW) -> gx (N,C,H,W), OH and OW from gy
void CudaBackend::adaptive_avg_pool2d_backward(const MacPolicy& p, const Tensor& gy, Tensor& gx,
                                               DrawKey key) {
  OpScope scope("adaptive_avg_pool2d_backward");
  const PoolGeometry g = geometry(check_adaptive_avg_pool2d_backward(gy, gx));
  if (g.planes * g.in_plane() == 0) return;
  const Tensor gc = gy.contiguous();
  avg_backward(p, g, contiguous_data(gc, "gy"), contiguous_data(gx, "gx"), key);
}

}  // namespace emu::EMU_CUDA_NS
