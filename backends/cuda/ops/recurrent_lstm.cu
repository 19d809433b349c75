// lstm_forward and lstm_backward on the device (core/backend_ops_recurrent.h),
// step by step as the CPU (backends/cpu/recurrent_ops.cpp): the gate
// reductions through the gemm op with the CPU's operands and streams, the cell
// in one kernel, one thread per unit (n, j), calling lstm_cell_forward /
// lstm_cell_backward of numerics/recurrent_cells.h with the element arithmetic
// at index n*H + j. Shared pieces: recurrent_common.h.
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/recurrent_common.h"
#include "numerics/recurrent_cells.h"

namespace emu::EMU_CUDA_NS {
namespace {

using recurrent::StepMask;

// Step t's cell of every unit e = n*H + j. pre (N, 4H): the gate reductions of
// the step; preact (N,T,4H) or null receives them for every row, valid or not
// (as the CPU copies them); a step that is not valid leaves h, c, y, saved and
// slopes as they are.
template <class A>
__global__ void lstm_cell_kernel(A arith, GateFunctions fns, StepMask mask, const float* pre, float* preact,
                                 float* h, float* c, float* y, float* saved, float* slopes, int64_t N,
                                 int64_t T, int64_t H, int64_t t) {
  const int64_t G = 4 * H;
  EMU_GRID_STRIDE_LOOP(e, N * H) {
    const int64_t n = e / H, j = e % H, row = n * T + t;
    const float* pr = pre + n * G + j;
    if (preact)
      for (int g = 0; g < 4; ++g) preact[row * G + g * H + j] = pr[g * H];
    if (!mask.valid(n, t)) continue;  // state carried, y stays as it is
    A a = arith;
    a.at(static_cast<uint64_t>(e));
    float c_next;
    h[e] = lstm_cell_forward(a, fns, pr[0], pr[H], pr[2 * H], pr[3 * H], c[e], &c_next,
                             saved + row * 6 * H + j, H, slopes ? slopes + row * 5 * H + j : nullptr);
    c[e] = c_next;
    y[row * H + j] = h[e];
  }
}

// Step t's cell gradient of every unit: dh_total = R(gy + dh) (when gy is given),
// then lstm_cell_backward writes the gate gradients dg[n, t, :] and the new dc;
// step_dg (N, 4H) gets the same four values, the hidden-state reduction's
// operand. A step that is not valid leaves dg at zero (step_dg: zeros) and dh,
// dc as they are.
template <class A>
__global__ void lstm_cell_grad_kernel(A arith, GateFunctions fns, StepMask mask, const float* gy,
                                      const float* saved, const float* slopes, float* dh, float* dc,
                                      float* dg, float* step_dg, int64_t N, int64_t T, int64_t H, int64_t t) {
  EMU_GRID_STRIDE_LOOP(e, N * H) {
    const int64_t n = e / H, j = e % H, row = n * T + t;
    float* sd = step_dg + n * 4 * H + j;
    if (!mask.valid(n, t)) {
      sd[0] = sd[H] = sd[2 * H] = sd[3 * H] = 0.0f;
      continue;
    }
    A a = arith;
    a.at(static_cast<uint64_t>(e));
    const float dh_total = gy ? a.add(gy[row * H + j], dh[e], lstm_site::kDh) : dh[e];
    float* g = dg + row * 4 * H + j;
    dc[e] = lstm_cell_backward(a, fns, saved + row * 6 * H + j, slopes ? slopes + row * 5 * H + j : nullptr,
                               H, dh_total, dc[e], g);
    sd[0] = g[0], sd[H] = g[H], sd[2 * H] = g[2 * H], sd[3 * H] = g[3 * H];
  }
}

// dh[e] = the step's reduction dh_gates[e] where step t of the unit's sequence is valid.
__global__ void lstm_carry_kernel(StepMask mask, const float* dh_gates, float* dh, int64_t N, int64_t H,
                                  int64_t t) {
  EMU_GRID_STRIDE_LOOP(e, N * H) {
    if (mask.valid(e / H, t)) dh[e] = dh_gates[e];
  }
}

}  // namespace

// x (N,T,I), h0, c0 (N,H), w_ih (4H,I), w_hh (4H,H), bias (4H), mask (N,T) -> y (N,T,H), h_n, c_n (N,H),
// xh (N,T,I+H), saved (N,T,6H), slopes (N,T,5H), preact (N,T,4H)
void CudaBackend::lstm_forward(const MacPolicy& p, const GateFunctions& fns, const Format& act,
                               const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                               const Tensor& w_hh, const Tensor* bias, const Tensor* mask, bool reverse,
                               Tensor& y, Tensor& h_n, Tensor& c_n, Tensor& xh, Tensor& saved, Tensor* slopes,
                               Tensor* preact, DrawKey key) {
  using namespace recurrent;
  OpScope scope("lstm_forward");
  const Dims d = check_lstm_forward(fns.any_pwl(), x, h0, c0, w_ih, w_hh, bias, mask, y, h_n, c_n, xh, saved,
                                    slopes, preact);
  const int64_t N = d.N, T = d.T, I = d.I, H = d.H, K = I + H, G = 4 * H;
  float* slp = fns.any_pwl() ? view_of(*slopes).data : nullptr;
  const Tensor xc = x.contiguous(), bc = bias ? bias->contiguous() : Tensor(),
               mc = mask ? mask->contiguous() : Tensor();
  const Tensor w = pack_weights(*this, w_ih, w_hh);  // (K, 4H)
  copy(h0, h_n);
  copy(c0, c_n);
  const StepMask sm{data_or_null(mc), T};
  float* h = view_of(h_n).data;
  float* c = view_of(c_n).data;
  float* pa = preact ? view_of(*preact).data : nullptr;
  Tensor pre = Tensor::zeros({N, G}, Device::Cuda);
  const Tensor rows = Tensor::zeros({N, K}, Device::Cuda);  // xh[:, t], contiguous
  for (int64_t k = 0; k < T; ++k) {
    const int64_t t = step_time(k, T, reverse);
    const DrawKey step = recurrent_step_key(key, t);
    fill_operand_rows(act, step, lstm_site::kReadH, d, view_of(xc).data, t, h, view_of(xh).data,
                      view_of(rows).data);
    // (N rows of xh at step t) x (K, 4H): input features, then hidden features, then the bias.
    gemm(p, rows, w, bias ? &bc : nullptr, pre, site_key(step, lstm_site::kGates));
    with_arith(p.out, step, [&](auto a) {
      launch_each("lstm_cell_kernel", lstm_cell_kernel<decltype(a)>, N * H, a, fns, sm, view_of(pre).data, pa,
                  h, c, view_of(y).data, view_of(saved).data, slp, N, T, H, t);
    });
  }
}

// w_ih (4H,I), w_hh (4H,H), xh (N,T,I+H), saved (N,T,6H), slopes (N,T,5H), gy (N,T,H), gh_n, gc_n (N,H),
// mask (N,T) -> dx (N,T,I), dw_ih (4H,I), dw_hh (4H,H), dbias (4H), dh0, dc0 (N,H)
void CudaBackend::lstm_backward(const MacPolicy& p, const GateFunctions& fns, const Tensor& w_ih,
                                const Tensor& w_hh, const Tensor& xh, const Tensor& saved,
                                const Tensor* slopes, const Tensor* gy, const Tensor* gh_n,
                                const Tensor* gc_n, const Tensor* mask, bool reverse, Tensor* dx,
                                Tensor* dw_ih, Tensor* dw_hh, Tensor* dbias, Tensor& dh0, Tensor& dc0,
                                DrawKey key) {
  using namespace recurrent;
  OpScope scope("lstm_backward");
  const Dims d = check_lstm_backward(fns.any_pwl(), w_ih, w_hh, xh, saved, slopes, gy, gh_n, gc_n, mask, dx,
                                     dw_ih, dw_hh, dbias, dh0, dc0);
  const int64_t N = d.N, T = d.T, H = d.H, G = 4 * H;
  const Tensor slc = fns.any_pwl() ? slopes->contiguous() : Tensor();
  const Tensor whh = w_hh.contiguous(), xhc = xh.contiguous(), sc = saved.contiguous(),
               gyc = gy ? gy->contiguous() : Tensor(), mc = mask ? mask->contiguous() : Tensor();
  // dh0 / dc0 hold the gradient of the state reaching the step being processed.
  if (gh_n)
    copy(*gh_n, dh0);
  else
    fill(dh0, 0.0f);
  if (gc_n)
    copy(*gc_n, dc0);
  else
    fill(dc0, 0.0f);
  const Tensor dg = Tensor::zeros({N, T, G}, Device::Cuda);  // gate gradients, row n*T + t
  if (N * H > 0) {
    const StepMask sm{data_or_null(mc), T};
    float* dh = view_of(dh0).data;
    float* dc = view_of(dc0).data;
    Tensor dh_gates = Tensor::zeros({N, H}, Device::Cuda);
    const Tensor step_dg = Tensor::zeros({N, G}, Device::Cuda);  // dg[:, t], contiguous
    for (int64_t k = T - 1; k >= 0; --k) {
      const int64_t t = step_time(k, T, reverse);
      const DrawKey step = recurrent_step_key(key, t);
      with_arith(p.out, step, [&](auto a) {
        launch_each("lstm_cell_grad_kernel", lstm_cell_grad_kernel<decltype(a)>, N * H, a, fns, sm,
                    data_or_null(gyc), view_of(sc).data, data_or_null(slc), dh, dc, view_of(dg).data,
                    view_of(step_dg).data, N, T, H, t);
      });
      // dh_{t-1} = dg[:, t] (N, 4H) x W_hh (4H, H): a reduction over the gate units.
      gemm(p, step_dg, whh, nullptr, dh_gates, site_key(step, lstm_site::kGemmH));
      launch_each("lstm_carry_kernel", lstm_carry_kernel, N * H, sm,
                  static_cast<const float*>(view_of(dh_gates).data), dh, N, H, t);
    }
  }
  const SequenceGrads sg{*this, p, d, key};
  const Tensor rows = dg.view({N * T, G});
  const ColumnRange all[] = {{0, G}};
  sg.input(rows, G, w_ih, dx);
  sg.weight(rows, all, 1, xhc, false, dw_ih);
  sg.weight(rows, all, 1, xhc, true, dw_hh);
  sg.bias(rows, dbias);
}

}  // namespace emu::EMU_CUDA_NS
