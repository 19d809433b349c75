// Index gathers and scatter-sums, temporal pooling on the device
// (EMU_OPS_SEQUENCE, core/backend_ops_sequence.h), with the arithmetic of
// numerics/sequence_steps.h, the CPU's definitions (backends/cpu/sequence_ops.cpp).
//
// Indices, masks and argmax are checked on the host from a downloaded copy by
// core/sequence_checks.h (the CPU's checks, naming the position); the checked
// integers go to the device, so the kernels read exactly the values that passed. Every output is computed by
// one thread: a gathered element, a channel's pool over its valid steps
// (ascending), and index_sum's output (a, s, b), which walks the positions p
// with index[p] == s in ascending p from a per-row list that the host builds
// with the CPU's stable counting sort. No atomics: each sum is one dependent
// chain in the canonical order, and draws lie at the CPU's indices.
#include <vector>

#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/scratch.h"
#include "core/backend_ops_nn.h"
#include "core/sequence_checks.h"
#include "numerics/row_reduce.h"
#include "numerics/sequence_steps.h"
#include "numerics/stage_round.h"

namespace emu::EMU_CUDA_NS {
namespace {

// --- gathers and scatter-sums ------------------------------------------------

// Per element of y (A,P,B): y[a,p,b] = R_out(x[a, idx[p], b]) (stage 0); plain fp32 copies.
__global__ void index_gather_kernel(StageRound r, bool copy, const int64_t* idx, const float* x, float* y,
                                    int64_t n, int64_t P, int64_t S, int64_t B) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t row = i / B, b = i % B;
    const float v = x[(row / P * S + idx[row % P]) * B + b];
    y[i] = copy ? v : r.round(v, static_cast<uint64_t>(i));
  }
}

// Per output o = (a, s, b) of dst (A,S,B): the plain sum of src[a, p, b] over the
// positions order[first[s]] .. order[first[s+1] - 1] (ascending p; none when s ==
// skip), rounded to out at mac_reduce's output site.
__global__ void index_sum_kernel(MacRounding sum, bool native, SequenceSumResult result, const int64_t* first,
                                 const int64_t* order, int64_t skip, const float* src, float* dst, int64_t n,
                                 int64_t P, int64_t S, int64_t B, uint64_t sites) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t row = i / B, b = i % B;
    const int64_t a = row / S, s = row % S;
    const int64_t k0 = first[s], K = s == skip ? 0 : first[s + 1] - k0;
    const float* base = offset_or_null(src, a * P * B + b);  // src is null when P == 0
    auto terms = [&](int64_t k, float* t, float* one) {
      *t = base[order[k0 + k] * B];
      *one = 1.0f;
    };
    const uint64_t o = static_cast<uint64_t>(i);
    dst[i] = result(sequence_sum(sum, native, K, terms, result.seed, result.stream, o, sites), K, o, sites);
  }
}

// --- temporal pools ------------------------------------------------------------

// Whether step t of sequence n takes part (mask (N, L) or null: every step).
EMU_HD bool step_valid(const float* mask, int64_t L, int64_t n, int64_t t) {
  return !mask || mask[n * L + t] != 0.0f;
}

// The (n, c, step) of element i of x in layout tl.
struct Coords {
  int64_t n, c, t;
};
EMU_HD Coords coords_of(const TimeLayout& tl, int64_t i) {
  if (tl.time_dim == 2) return Coords{i / (tl.C * tl.L), (i / tl.L) % tl.C, i % tl.L};
  return Coords{i / (tl.L * tl.C), i % tl.C, (i / tl.C) % tl.L};
}

// Output o = (n, c): y = R_out(S / count[n]) (stage 1), S the plain sum of x over the
// valid steps ascending (stage 0; site stride L).
__global__ void temporal_avg_kernel(MacRounding sum, bool native, StageRound quotient, TimeLayout tl,
                                    const float* x, const float* mask, const int64_t* count, float* y,
                                    uint64_t seed, uint64_t stream, uint64_t sites) {
  EMU_GRID_STRIDE_LOOP(o, tl.N * tl.C) {
    const int64_t n = o / tl.C, c = o % tl.C;
    const float* xs = offset_or_null(x, tl.base(n, c));  // x is null when T == 0
    int64_t t = 0;  // the next step to look at: terms are read in ascending k
    auto terms = [&](int64_t, float* v, float* one) {
      while (!step_valid(mask, tl.L, n, t)) ++t;
      *v = xs[t * tl.step()];
      *one = 1.0f;
      ++t;
    };
    const uint64_t uo = static_cast<uint64_t>(o);
    const double s = sequence_sum(sum, native, count[n], terms, seed, stream, uo, sites);
    y[o] = quotient.div(s, static_cast<double>(count[n]), uo);
  }
}

// Output o = (n, c): q = R_out(gy / count[n]) (stage 0).
__global__ void temporal_avg_quotient_kernel(StageRound quotient, const float* gy, const int64_t* count,
                                             float* q, int64_t n_out, int64_t C) {
  EMU_GRID_STRIDE_LOOP(o, n_out) {
    q[o] = quotient.div(gy[o], static_cast<double>(count[o / C]), static_cast<uint64_t>(o));
  }
}

// Per element of gx: the one-term sum of q[n, c] at valid steps (stage 1), +0 elsewhere.
__global__ void temporal_avg_grad_kernel(OneTermSum one, TimeLayout tl, const float* q, const float* mask,
                                         float* gx, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const Coords k = coords_of(tl, i);
    gx[i] = step_valid(mask, tl.L, k.n, k.t) ? one(q[k.n * tl.C + k.c], static_cast<uint64_t>(i)) : 0.0f;
  }
}

// Output o = (n, c): y = R_out(max over the valid steps) (stage 0), argmax its step
// (ties to the earliest, the first NaN wins: max_step_takes).
__global__ void temporal_max_kernel(StageRound r, TimeLayout tl, const float* x, const float* mask, float* y,
                                    float* argmax) {
  EMU_GRID_STRIDE_LOOP(o, tl.N * tl.C) {
    const int64_t n = o / tl.C, c = o % tl.C;
    const float* xs = offset_or_null(x, tl.base(n, c));  // x is null when T == 0
    float best = 0.0f;
    int64_t at = -1;
    for (int64_t t = 0; t < tl.L; ++t) {
      if (!step_valid(mask, tl.L, n, t)) continue;
      const float v = xs[t * tl.step()];
      if (max_step_takes(at >= 0, best, v)) {
        best = v;
        at = t;
      }
    }
    y[o] = r.round(best, static_cast<uint64_t>(o));
    argmax[o] = static_cast<float>(at);
  }
}

// Per element of gx: the one-term sum of (argmax[n,c] == t ? gy[n,c] : 0) (stage 0).
__global__ void temporal_max_grad_kernel(OneTermSum one, TimeLayout tl, const float* gy, const int64_t* am,
                                         float* gx, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const Coords k = coords_of(tl, i);
    const int64_t o = k.n * tl.C + k.c;
    gx[i] = one(am[o] == k.t ? gy[o] : 0.0f, static_cast<uint64_t>(i));
  }
}

// --- host side ---------------------------------------------------------------------

// Host integers on the device: `d` holds v.size() of them.
void to_device(DeviceArray<int64_t>& d, const std::vector<int64_t>& v) {
  if (!v.empty()) copy_to_device(d.get(), v.data(), v.size() * sizeof(int64_t));
}

// A contiguous device copy of the optional mask and its pointer (null without a mask).
struct Mask {
  Tensor t;
  const float* data = nullptr;
  explicit Mask(const Tensor* m) {
    if (!m) return;
    t = m->contiguous();
    data = contiguous_data(t, "mask");
  }
};

}  // namespace

// index (P), x (A,S,B) -> y (A,P,B)
void CudaBackend::index_gather(const Format& out, const Tensor& index, const Tensor& x, Tensor& y,
                               DrawKey key) {
  OpScope scope("index_gather");
  const std::vector<int64_t> idx = check_index_gather(index, x, y);
  const int64_t A = x.dim(0), S = x.dim(1), B = x.dim(2), P = static_cast<int64_t>(idx.size());
  const int64_t n = A * P * B;
  if (n == 0) return;
  DeviceArray<int64_t> dev_idx(idx.size());
  to_device(dev_idx, idx);
  const Tensor xc = x.contiguous();
  launch_each("index_gather_kernel", index_gather_kernel, n, StageRound(out, key.seed, key.stream),
              is_plain_fp32(out), dev_idx.get(), contiguous_data(xc, "x"), contiguous_data(y, "y"), n, P, S,
              B);
}

// index (P), src (A,P,B) -> dst (A,S,B)
void CudaBackend::index_sum(const MacPolicy& p, const Tensor& index, int64_t skip, const Tensor& src,
                            Tensor& dst, DrawKey key) {
  OpScope scope("index_sum");
  const std::vector<int64_t> idx = check_index_sum(index, src, dst);
  const int64_t A = dst.dim(0), S = dst.dim(1), B = dst.dim(2), P = static_cast<int64_t>(idx.size());
  const int64_t n = A * S * B;
  if (n == 0) return;
  // The positions of each s, ascending (the CPU's stable counting sort).
  std::vector<int64_t> first(static_cast<size_t>(S + 1), 0), order(static_cast<size_t>(P));
  for (int64_t i : idx) ++first[i + 1];
  for (int64_t s = 0; s < S; ++s) first[s + 1] += first[s];
  {
    std::vector<int64_t> next(first.begin(), first.end() - 1);
    for (int64_t pos = 0; pos < P; ++pos) order[next[idx[pos]]++] = pos;
  }
  DeviceArray<int64_t> dev_first(first.size()), dev_order(order.size());
  to_device(dev_first, first);
  to_device(dev_order, order);
  const Tensor sc = src.contiguous();
  launch_each("index_sum_kernel", index_sum_kernel, n, MacRounding(plain_sum_policy(p)), native_sum(p),
              SequenceSumResult(p, key.seed, key.stream), static_cast<const int64_t*>(dev_first.get()),
              static_cast<const int64_t*>(dev_order.get()), skip, contiguous_data(sc, "src"),
              contiguous_data(dst, "dst"), n, P, S, B, mac_site_count(P, p.chunk));
}

// x (N,C,L) or (N,L,C), mask (N,L) or null -> y (N,C)
void CudaBackend::temporal_avg_pool_forward(const MacPolicy& p, int time_dim, const Tensor& x,
                                            const Tensor* mask, Tensor& y, DrawKey key) {
  OpScope scope("temporal_avg_pool_forward");
  const TemporalPool pool = check_temporal_avg_pool_forward(time_dim, x, mask, y);
  const TimeLayout& t = pool.t;
  const Validity& v = pool.v;
  if (t.N * t.C == 0) return;
  DeviceArray<int64_t> count(v.count.size());
  to_device(count, v.count);
  const Tensor xc = x.contiguous();
  const Mask m(mask);
  launch_each("temporal_avg_kernel", temporal_avg_kernel, t.N * t.C, MacRounding(plain_sum_policy(p)),
              native_sum(p), StageRound(p.out, key.seed, key.stream + 1), t, contiguous_data(xc, "x"), m.data,
              static_cast<const int64_t*>(count.get()), contiguous_data(y, "y"), key.seed, key.stream,
              mac_site_count(t.L, p.chunk));
}

// gy (N,C), mask (N,L) or null -> gx (N,C,L) or (N,L,C)
void CudaBackend::temporal_avg_pool_backward(const MacPolicy& p, int time_dim, const Tensor& gy,
                                             const Tensor* mask, Tensor& gx, DrawKey key) {
  OpScope scope("temporal_avg_pool_backward");
  const TemporalPool pool = check_temporal_avg_pool_backward(time_dim, gy, mask, gx);
  const TimeLayout& t = pool.t;
  const Validity& v = pool.v;
  const int64_t n = t.N * t.C * t.L;
  if (n == 0) return;
  DeviceArray<int64_t> count(v.count.size());
  to_device(count, v.count);
  DeviceArray<float> q(static_cast<size_t>(t.N * t.C));
  const Tensor gc = gy.contiguous();
  const Mask m(mask);
  launch_each("temporal_avg_quotient_kernel", temporal_avg_quotient_kernel, t.N * t.C,
              StageRound(p.out, key.seed, key.stream), static_cast<const float*>(contiguous_data(gc, "gy")),
              static_cast<const int64_t*>(count.get()), q.get(), t.N * t.C, t.C);
  launch_each("temporal_avg_grad_kernel", temporal_avg_grad_kernel, n,
              OneTermSum(p, key.seed, key.stream + 1), t, static_cast<const float*>(q.get()), m.data,
              contiguous_data(gx, "gx"), n);
}

// x (N,C,L) or (N,L,C), mask (N,L) or null -> y (N,C), argmax (N,C)
void CudaBackend::temporal_max_pool_forward(const Format& out, int time_dim, const Tensor& x,
                                            const Tensor* mask, Tensor& y, Tensor& argmax, DrawKey key) {
  OpScope scope("temporal_max_pool_forward");
  // The checks (the valid steps too); the kernel reads the mask itself.
  const TimeLayout t = check_temporal_max_pool_forward(time_dim, x, mask, y, argmax).t;
  if (t.N * t.C == 0) return;
  const Tensor xc = x.contiguous();
  const Mask m(mask);
  launch_each("temporal_max_kernel", temporal_max_kernel, t.N * t.C, StageRound(out, key.seed, key.stream), t,
              contiguous_data(xc, "x"), m.data, contiguous_data(y, "y"), contiguous_data(argmax, "argmax"));
}

// gy (N,C), argmax (N,C) -> gx (N,C,L) or (N,L,C)
void CudaBackend::temporal_max_pool_backward(const MacPolicy& p, int time_dim, const Tensor& gy,
                                             const Tensor& argmax, Tensor& gx, DrawKey key) {
  OpScope scope("temporal_max_pool_backward");
  const TemporalMaxGrad checked = check_temporal_max_pool_backward(time_dim, gy, argmax, gx);
  const TimeLayout& t = checked.t;
  const std::vector<int64_t>& am = checked.argmax;
  const int64_t n = t.N * t.C * t.L;
  if (n == 0) return;
  DeviceArray<int64_t> dev_am(am.size());
  to_device(dev_am, am);
  const Tensor gc = gy.contiguous();
  launch_each("temporal_max_grad_kernel", temporal_max_grad_kernel, n, OneTermSum(p, key.seed, key.stream), t,
              static_cast<const float*>(contiguous_data(gc, "gy")), static_cast<const int64_t*>(dev_am.get()),
              contiguous_data(gx, "gx"), n);
}

}  // namespace emu::EMU_CUDA_NS
