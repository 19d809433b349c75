// LSTM and GRU recurrences on the CPU (core/backend_ops_recurrent.h,
// docs/layers_recurrent.md).
//
// Per step: the operand rows xh[:,t] = [x_t, R_act(h_{t-1})], the gate
// reductions through mac_gemm (the gemm op's code: per-output canonical order,
// fast paths for common policies, thread-count independent; strided rows, so
// nothing is copied), then the element-wise cell (lstm_cell_forward /
// gru_cell_forward of the op header) over the N*H units, threaded over units.
// Both run on the CPU thread pool (numerics/parallel_for.h): no step starts a
// thread.
// Backward mirrors it step by step in the opposite order, then runs the input,
// weight and bias reductions over the whole sequence. Each element's arithmetic
// depends only on its own index, so neither threads nor the split change a bit.
#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/recurrent_checks.h"
#include "core/tensor.h"
#include "numerics/recurrent_cells.h"
#include "numerics/recurrent_sums.h"

namespace emu {
namespace {

constexpr int64_t kGrain = 2048;  // units per thread at least (each unit runs several functions)

using Dims = RecurrentDims;  // checked by core/recurrent_checks.h

// B (I+H, GH) = [w_ih | w_hh]^T, row-major: the forward gemm's second operand.
std::vector<float> pack_weights(const Tensor& w_ih, const Tensor& w_hh) {
  const Tensor a = w_ih.contiguous(), b = w_hh.contiguous();
  const int64_t GH = a.dim(0), I = a.dim(1), H = b.dim(1);
  std::vector<float> w(static_cast<size_t>((I + H) * GH));
  for (int64_t u = 0; u < GH; ++u) {
    for (int64_t i = 0; i < I; ++i) w[static_cast<size_t>(i * GH + u)] = a.data()[u * I + i];
    for (int64_t j = 0; j < H; ++j) w[static_cast<size_t>((I + j) * GH + u)] = b.data()[u * H + j];
  }
  return w;
}

// The columns [c0, c0 + count) of each range of src (rows x ld), transposed: row c of the
// result (concatenated ranges) holds column c over all rows. The weight gradients' first operand.
std::vector<float> transpose_columns(const float* src, int64_t rows, int64_t ld,
                                     std::initializer_list<std::pair<int64_t, int64_t>> ranges) {
  int64_t cols = 0;
  for (const auto& r : ranges) cols += r.second;
  std::vector<float> out(static_cast<size_t>(cols * rows));
  constexpr int64_t kBlock = 64;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t r1 = std::min(rows, r0 + kBlock);
    int64_t c = 0;
    for (const auto& [c0, count] : ranges)
      for (int64_t k = 0; k < count; ++k, ++c)
        for (int64_t r = r0; r < r1; ++r) out[static_cast<size_t>(c * rows + r)] = src[r * ld + c0 + k];
  }
  return out;
}

bool is_valid(const float* mask, const Dims& d, int64_t n, int64_t t) {
  return !mask || mask[n * d.T + t] != 0.0f;
}

// The time index of the k-th step a direction processes.
int64_t step_time(int64_t k, int64_t T, bool reverse) { return reverse ? T - 1 - k : k; }

GemmDraws gemm_draws(DrawKey step, uint32_t site) { return GemmDraws{step.seed, step.stream + site}; }

// Threads for a gemm of M*N*K multiply-adds: one below a quarter million, where
// waking the CPU thread pool (every call, twice a step) costs more than it
// saves. Results never depend on it.
int gemm_threads(int threads, int64_t M, int64_t N, int64_t K) {
  return M * N * K < (int64_t{1} << 18) ? 1 : threads;
}

// xh[:, t] (N rows of I+H) = [x[:, t, :], R_act(h)]; R_act element (n, j) draws at n*H + j
// of site `site`.
void fill_operand_rows(const Format& act, DrawKey step, uint32_t site, const Dims& d, const float* x,
                       int64_t t, const float* h, float* xh) {
  const int64_t K = d.I + d.H;
  const bool plain = is_plain_fp32(act);
  ElementArith read(act, step.seed, step.stream);
  for (int64_t n = 0; n < d.N; ++n) {
    float* row = xh + (n * d.T + t) * K;
    std::copy(x + (n * d.T + t) * d.I, x + (n * d.T + t + 1) * d.I, row);
    float* hr = row + d.I;
    for (int64_t j = 0; j < d.H; ++j) {
      if (plain) {
        hr[j] = h[n * d.H + j];
      } else {
        read.at(static_cast<uint64_t>(n * d.H + j));
        hr[j] = read.round(h[n * d.H + j], site);
      }
    }
  }
}

// Runs body(a, lo, hi) over the N*H units with the element arithmetic of f:
// native binary32 for plain fp32, else ElementArith drawing from `step`.
template <class Body>
void for_units(const Format& f, DrawKey step, int64_t units, int threads, const Body& body) {
  const bool plain = is_plain_fp32(f);
  const ElementArith arith(f, step.seed, step.stream);
  parallel_for(units, threads, kGrain, [&](int64_t lo, int64_t hi) {
    if (plain)
      body(Fp32Arith{}, lo, hi);
    else
      body(arith, lo, hi);
  });
}

Tensor contiguous_or_empty(const Tensor* t) { return t ? t->contiguous() : Tensor(); }

// The reductions over the whole sequence, from the gate gradients dg (N*T rows of
// ldg, row n*T + t): dx over the gate units x_cols of each row, dw_ih / dw_hh over
// the rows (n, t) of the gate units in x_ranges / h_ranges, dbias as plain sums of
// every column.
struct SequenceGrads {
  const MacPolicy& p;
  const Dims& d;
  DrawKey key;
  int threads;

  void input(const float* dg, int64_t ldg, int64_t x_cols, const Tensor& w_ih, Tensor* dx) const {
    if (!dx) return;
    const Tensor w = w_ih.contiguous();  // (x_cols, I)
    mac_gemm(p, dg, ldg, w.data(), d.I, dx->data(), d.I, d.N * d.T, d.I, x_cols, nullptr,
             gemm_draws(key, recurrent_site::kGradX), gemm_threads(threads, d.N * d.T, d.I, x_cols));
  }
  void weight(const float* dg, int64_t ldg, std::initializer_list<std::pair<int64_t, int64_t>> ranges,
              const float* xh, bool hidden, Tensor* dw) const {
    if (!dw) return;
    const int64_t rows = d.N * d.T, K = d.I + d.H, cols = hidden ? d.H : d.I;
    const std::vector<float> dgt = transpose_columns(dg, rows, ldg, ranges);
    mac_gemm(p, dgt.data(), rows, xh + (hidden ? d.I : 0), K, dw->data(), cols, dw->dim(0), cols, rows,
             nullptr, gemm_draws(key, hidden ? recurrent_site::kGradWhh : recurrent_site::kGradWih),
             gemm_threads(threads, dw->dim(0), cols, rows));
  }
  // Plain sums under recurrent_bias_policy (numerics/recurrent_sums.h, shared with the CUDA backend).
  void bias(const float* dg, int64_t cols, Tensor* dbias) const {
    if (!dbias) return;
    const MacPolicy sum = recurrent_bias_policy(p);
    const int64_t rows = d.N * d.T;
    const std::vector<float> ones(static_cast<size_t>(rows), 1.0f);
    mac_gemm(sum, ones.data(), rows, dg, cols, dbias->data(), cols, 1, cols, rows, nullptr,
             gemm_draws(key, recurrent_site::kGradBias), gemm_threads(threads, 1, cols, rows));
  }
};

}  // namespace

// x (N,T,I), h0, c0 (N,H), w_ih (4H,I), w_hh (4H,H), bias (4H), mask (N,T) -> y (N,T,H), h_n, c_n (N,H),
// xh (N,T,I+H), saved (N,T,6H), slopes (N,T,5H), preact (N,T,4H)
void CpuBackend::lstm_forward(const MacPolicy& p, const GateFunctions& fns, const Format& act,
                              const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                              const Tensor& w_hh, const Tensor* bias, const Tensor* mask, bool reverse,
                              Tensor& y, Tensor& h_n, Tensor& c_n, Tensor& xh, Tensor& saved, Tensor* slopes,
                              Tensor* preact, DrawKey key) {
  const Dims d = check_lstm_forward(fns.any_pwl(), x, h0, c0, w_ih, w_hh, bias, mask, y, h_n, c_n, xh, saved,
                                    slopes, preact);
  const int64_t N = d.N, T = d.T, I = d.I, H = d.H, K = I + H, G = 4 * H;
  float* slp = fns.any_pwl() ? slopes->data() : nullptr;
  const Tensor xc = x.contiguous(), bc = contiguous_or_empty(bias), mc = contiguous_or_empty(mask);
  const std::vector<float> w = pack_weights(w_ih, w_hh);
  const float* xp = xc.data();
  const float* mp = mask ? mc.data() : nullptr;
  float* h = h_n.data();
  float* c = c_n.data();
  h_n.copy_from(h0);
  c_n.copy_from(c0);
  std::vector<float> pre(static_cast<size_t>(N * G));
  for (int64_t k = 0; k < T; ++k) {
    const int64_t t = step_time(k, T, reverse);
    const DrawKey step = recurrent_step_key(key, t);
    fill_operand_rows(act, step, lstm_site::kReadH, d, xp, t, h, xh.data());
    // (N rows of xh, stride T*K) x (K, 4H): input features, then hidden features, then the bias.
    mac_gemm(p, xh.data() + t * K, T * K, w.data(), G, pre.data(), G, N, G, K, bias ? bc.data() : nullptr,
             gemm_draws(step, lstm_site::kGates), gemm_threads(threads_, N, G, K));
    if (preact)
      for (int64_t n = 0; n < N; ++n)
        std::copy(pre.begin() + n * G, pre.begin() + (n + 1) * G, preact->data() + (n * T + t) * G);
    float* yp = y.data();
    float* sp = saved.data();
    for_units(p.out, step, N * H, threads_, [&](auto a, int64_t lo, int64_t hi) {
      for (int64_t e = lo; e < hi; ++e) {
        const int64_t n = e / H, j = e % H;
        if (!is_valid(mp, d, n, t)) continue;  // state carried, y stays +0
        a.at(static_cast<uint64_t>(e));
        const float* pr = pre.data() + n * G + j;
        float c_next;
        h[e] =
            lstm_cell_forward(a, fns, pr[0], pr[H], pr[2 * H], pr[3 * H], c[e], &c_next,
                              sp + (n * T + t) * 6 * H + j, H, slp ? slp + (n * T + t) * 5 * H + j : nullptr);
        c[e] = c_next;
        yp[(n * T + t) * H + j] = h[e];
      }
    });
  }
}

// w_ih (4H,I), w_hh (4H,H), xh (N,T,I+H), saved (N,T,6H), slopes (N,T,5H), gy (N,T,H), gh_n, gc_n (N,H),
// mask (N,T) -> dx (N,T,I), dw_ih (4H,I), dw_hh (4H,H), dbias (4H), dh0, dc0 (N,H)
void CpuBackend::lstm_backward(const MacPolicy& p, const GateFunctions& fns, const Tensor& w_ih,
                               const Tensor& w_hh, const Tensor& xh, const Tensor& saved,
                               const Tensor* slopes, const Tensor* gy, const Tensor* gh_n, const Tensor* gc_n,
                               const Tensor* mask, bool reverse, Tensor* dx, Tensor* dw_ih, Tensor* dw_hh,
                               Tensor* dbias, Tensor& dh0, Tensor& dc0, DrawKey key) {
  const Dims d = check_lstm_backward(fns.any_pwl(), w_ih, w_hh, xh, saved, slopes, gy, gh_n, gc_n, mask, dx,
                                     dw_ih, dw_hh, dbias, dh0, dc0);
  const int64_t N = d.N, T = d.T, H = d.H, G = 4 * H;
  const Tensor slc = fns.any_pwl() ? slopes->contiguous() : Tensor();
  const float* slp = fns.any_pwl() ? slc.data() : nullptr;
  const Tensor whh = w_hh.contiguous(), xhc = xh.contiguous(), sc = saved.contiguous(),
               gyc = contiguous_or_empty(gy), mc = contiguous_or_empty(mask);
  const float* mp = mask ? mc.data() : nullptr;
  const float* gyp = gy ? gyc.data() : nullptr;
  const float* sp = sc.data();
  float* dh = dh0.data();  // the gradient of the state h reaching the step being processed
  float* dc = dc0.data();
  if (gh_n)
    dh0.copy_from(*gh_n);
  else
    dh0.fill(0.0f);
  if (gc_n)
    dc0.copy_from(*gc_n);
  else
    dc0.fill(0.0f);
  std::vector<float> dg(static_cast<size_t>(N * T * G), 0.0f);  // gate gradients, row n*T + t
  std::vector<float> dh_gates(static_cast<size_t>(N * H));
  for (int64_t k = T - 1; k >= 0; --k) {
    const int64_t t = step_time(k, T, reverse);
    const DrawKey step = recurrent_step_key(key, t);
    for_units(p.out, step, N * H, threads_, [&](auto a, int64_t lo, int64_t hi) {
      for (int64_t e = lo; e < hi; ++e) {
        const int64_t n = e / H, j = e % H;
        if (!is_valid(mp, d, n, t)) continue;  // zero gate gradients, dh and dc carried
        a.at(static_cast<uint64_t>(e));
        const float dh_total = gyp ? a.add(gyp[(n * T + t) * H + j], dh[e], lstm_site::kDh) : dh[e];
        dc[e] = lstm_cell_backward(a, fns, sp + (n * T + t) * 6 * H + j,
                                   slp ? slp + (n * T + t) * 5 * H + j : nullptr, H, dh_total, dc[e],
                                   dg.data() + (n * T + t) * G + j);
      }
    });
    // dh_{t-1} = dg[:, t] (N rows, stride T*4H) x W_hh (4H,H): a reduction over the gate units.
    mac_gemm(p, dg.data() + t * G, T * G, whh.data(), H, dh_gates.data(), H, N, H, G, nullptr,
             gemm_draws(step, lstm_site::kGemmH), gemm_threads(threads_, N, H, G));
    for (int64_t e = 0; e < N * H; ++e)
      if (is_valid(mp, d, e / H, t)) dh[e] = dh_gates[static_cast<size_t>(e)];
  }
  const SequenceGrads sg{p, d, key, threads_};
  sg.input(dg.data(), G, G, w_ih, dx);
  sg.weight(dg.data(), G, {{0, G}}, xhc.data(), false, dw_ih);
  sg.weight(dg.data(), G, {{0, G}}, xhc.data(), true, dw_hh);
  sg.bias(dg.data(), G, dbias);
}

// x (N,T,I), h0 (N,H), w_ih (3H,I), w_hh (3H,H), bias (4H), mask (N,T) -> y (N,T,H), h_n (N,H),
// xh (N,T,I+H), saved (N,T,5H), slopes (N,T,3H), preact (N,T,4H)
void CpuBackend::gru_forward(const MacPolicy& p, const GateFunctions& fns, const Format& act, const Tensor& x,
                             const Tensor& h0, const Tensor& w_ih, const Tensor& w_hh, const Tensor* bias,
                             const Tensor* mask, bool reverse, Tensor& y, Tensor& h_n, Tensor& xh,
                             Tensor& saved, Tensor* slopes, Tensor* preact, DrawKey key) {
  const Dims d =
      check_gru_forward(fns.any_pwl(), x, h0, w_ih, w_hh, bias, mask, y, h_n, xh, saved, slopes, preact);
  const int64_t N = d.N, T = d.T, I = d.I, H = d.H, K = I + H, W = 3 * H, G = 4 * H;
  float* slp = fns.any_pwl() ? slopes->data() : nullptr;
  const Tensor xc = x.contiguous(), bc = contiguous_or_empty(bias), mc = contiguous_or_empty(mask);
  const std::vector<float> w = pack_weights(w_ih, w_hh);  // (K, 3H)
  const float* xp = xc.data();
  const float* wp = w.data();
  const float* bp = bias ? bc.data() : nullptr;
  const float* mp = mask ? mc.data() : nullptr;
  float* h = h_n.data();
  h_n.copy_from(h0);
  std::vector<float> pre(static_cast<size_t>(N * G));  // per row: a_r, a_z, a_nx, a_nh
  for (int64_t k = 0; k < T; ++k) {
    const int64_t t = step_time(k, T, reverse);
    const DrawKey step = recurrent_step_key(key, t);
    fill_operand_rows(act, step, gru_site::kReadH, d, xp, t, h, xh.data());
    const float* rows = xh.data() + t * K;  // N rows, stride T*K
    // r, z: the input features, then the hidden features, then the bias.
    mac_gemm(p, rows, T * K, wp, W, pre.data(), G, N, 2 * H, K, bp, gemm_draws(step, gru_site::kGatesRZ),
             gemm_threads(threads_, N, 2 * H, K));
    // a_nx over the input features, then b_in; a_nh over the hidden features, then b_hn.
    mac_gemm(p, rows, T * K, wp + 2 * H, W, pre.data() + 2 * H, G, N, H, I, bp ? bp + 2 * H : nullptr,
             gemm_draws(step, gru_site::kGatesNX), gemm_threads(threads_, N, H, I));
    mac_gemm(p, rows + I, T * K, wp + I * W + 2 * H, W, pre.data() + 3 * H, G, N, H, H,
             bp ? bp + 3 * H : nullptr, gemm_draws(step, gru_site::kGatesNH),
             gemm_threads(threads_, N, H, H));
    if (preact)
      for (int64_t n = 0; n < N; ++n)
        std::copy(pre.begin() + n * G, pre.begin() + (n + 1) * G, preact->data() + (n * T + t) * G);
    float* yp = y.data();
    float* sp = saved.data();
    for_units(p.out, step, N * H, threads_, [&](auto a, int64_t lo, int64_t hi) {
      for (int64_t e = lo; e < hi; ++e) {
        const int64_t n = e / H, j = e % H;
        if (!is_valid(mp, d, n, t)) continue;
        a.at(static_cast<uint64_t>(e));
        const float* pr = pre.data() + n * G + j;
        h[e] =
            gru_cell_forward(a, fns, pr[0], pr[H], pr[2 * H], pr[3 * H], h[e], sp + (n * T + t) * 5 * H + j,
                             H, slp ? slp + (n * T + t) * 3 * H + j : nullptr);
        yp[(n * T + t) * H + j] = h[e];
      }
    });
  }
}

// w_ih (3H,I), w_hh (3H,H), xh (N,T,I+H), saved (N,T,5H), slopes (N,T,3H), gy (N,T,H), gh_n (N,H),
// mask (N,T) -> dx (N,T,I), dw_ih (3H,I), dw_hh (3H,H), dbias (4H), dh0 (N,H)
void CpuBackend::gru_backward(const MacPolicy& p, const GateFunctions& fns, const Tensor& w_ih,
                              const Tensor& w_hh, const Tensor& xh, const Tensor& saved, const Tensor* slopes,
                              const Tensor* gy, const Tensor* gh_n, const Tensor* mask, bool reverse,
                              Tensor* dx, Tensor* dw_ih, Tensor* dw_hh, Tensor* dbias, Tensor& dh0,
                              DrawKey key) {
  const Dims d = check_gru_backward(fns.any_pwl(), w_ih, w_hh, xh, saved, slopes, gy, gh_n, mask, dx, dw_ih,
                                    dw_hh, dbias, dh0);
  const int64_t N = d.N, T = d.T, H = d.H, W = 3 * H, G = 4 * H;
  const Tensor slc = fns.any_pwl() ? slopes->contiguous() : Tensor();
  const float* slp = fns.any_pwl() ? slc.data() : nullptr;
  const Tensor whh = w_hh.contiguous(), xhc = xh.contiguous(), sc = saved.contiguous(),
               gyc = contiguous_or_empty(gy), mc = contiguous_or_empty(mask);
  const float* mp = mask ? mc.data() : nullptr;
  const float* gyp = gy ? gyc.data() : nullptr;
  const float* sp = sc.data();
  float* dh = dh0.data();
  if (gh_n)
    dh0.copy_from(*gh_n);
  else
    dh0.fill(0.0f);
  std::vector<float> dg(static_cast<size_t>(N * T * G), 0.0f);  // [da_r, da_z, da_n, da_nh], row n*T + t
  std::vector<float> dd(static_cast<size_t>(N * H)), dh_gates(static_cast<size_t>(N * H));
  std::vector<float> operand(static_cast<size_t>(N * W));  // per row: da_r, da_z, da_nh
  for (int64_t k = T - 1; k >= 0; --k) {
    const int64_t t = step_time(k, T, reverse);
    const DrawKey step = recurrent_step_key(key, t);
    for_units(p.out, step, N * H, threads_, [&](auto a, int64_t lo, int64_t hi) {
      for (int64_t e = lo; e < hi; ++e) {
        const int64_t n = e / H, j = e % H;
        float* row = operand.data() + n * W + j;
        if (!is_valid(mp, d, n, t)) {
          row[0] = row[H] = row[2 * H] = 0.0f;
          continue;
        }
        a.at(static_cast<uint64_t>(e));
        const float dh_total = gyp ? a.add(gyp[(n * T + t) * H + j], dh[e], gru_site::kDh) : dh[e];
        float* g = dg.data() + (n * T + t) * G + j;
        dd[static_cast<size_t>(e)] =
            gru_cell_backward(a, fns, sp + (n * T + t) * 5 * H + j,
                              slp ? slp + (n * T + t) * 3 * H + j : nullptr, H, dh_total, g);
        row[0] = g[0], row[H] = g[H], row[2 * H] = g[3 * H];
      }
    });
    // The reduction over the gate units (r, z, n) of [da_r, da_z, da_nh] x W_hh.
    mac_gemm(p, operand.data(), W, whh.data(), H, dh_gates.data(), H, N, H, W, nullptr,
             gemm_draws(step, gru_site::kGemmH), gemm_threads(threads_, N, H, W));
    for_units(p.out, step, N * H, threads_, [&](auto a, int64_t lo, int64_t hi) {
      for (int64_t e = lo; e < hi; ++e) {
        if (!is_valid(mp, d, e / H, t)) continue;
        a.at(static_cast<uint64_t>(e));
        dh[e] = a.add(dh_gates[static_cast<size_t>(e)], dd[static_cast<size_t>(e)], gru_site::kDhPrev);
      }
    });
  }
  const SequenceGrads sg{p, d, key, threads_};
  sg.input(dg.data(), G, W, w_ih, dx);  // [da_r, da_z, da_n] x W_ih
  sg.weight(dg.data(), G, {{0, W}}, xhc.data(), false, dw_ih);
  sg.weight(dg.data(), G, {{0, 2 * H}, {3 * H, H}}, xhc.data(), true, dw_hh);
  sg.bias(dg.data(), G, dbias);
}

}  // namespace emu
