// gru_forward and gru_backward on the device (core/backend_ops_recurrent.h),
// step by step as the CPU (backends/cpu/recurrent_ops.cpp): the three gate
// reductions of a step (r and z over the input and hidden features, a_nx over
// the input features, a_nh over the hidden features) through the gemm op with
// the CPU's operands and streams, the cell in one kernel, one thread per unit
// (n, j), calling gru_cell_forward / gru_cell_backward of
// numerics/recurrent_cells.h with the element arithmetic at index n*H + j.
// Shared pieces: recurrent_common.h.
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/recurrent_common.h"
#include "numerics/recurrent_cells.h"

namespace emu::EMU_CUDA_NS {
namespace {

using recurrent::StepMask;

// Step t's cell of every unit e = n*H + j from the step's reductions rz (N, 2H),
// nx, nh (N, H); preact (N,T,4H) or null receives [a_r, a_z, a_nx, a_nh] for every
// row, valid or not (as the CPU copies them); a step that is not valid leaves h,
// y, saved and slopes as they are.
template <class A>
__global__ void gru_cell_kernel(A arith, GateFunctions fns, StepMask mask, const float* rz, const float* nx,
                                const float* nh, float* preact, float* h, float* y, float* saved,
                                float* slopes, int64_t N, int64_t T, int64_t H, int64_t t) {
  EMU_GRID_STRIDE_LOOP(e, N * H) {
    const int64_t n = e / H, j = e % H, row = n * T + t;
    const float ar = rz[n * 2 * H + j], az = rz[n * 2 * H + H + j], anx = nx[e], anh = nh[e];
    if (preact) {
      float* pa = preact + row * 4 * H + j;
      pa[0] = ar, pa[H] = az, pa[2 * H] = anx, pa[3 * H] = anh;
    }
    if (!mask.valid(n, t)) continue;  // state carried, y stays as it is
    A a = arith;
    a.at(static_cast<uint64_t>(e));
    h[e] = gru_cell_forward(a, fns, ar, az, anx, anh, h[e], saved + row * 5 * H + j, H,
                            slopes ? slopes + row * 3 * H + j : nullptr);
    y[row * H + j] = h[e];
  }
}

// Step t's cell gradient of every unit: dh_total = R(gy + dh) (when gy is given),
// then gru_cell_backward writes the gate gradients dg[n, t, :] = [da_r, da_z, da_n,
// da_nh] and dd; the reduction's operand row n (N, 3H) gets [da_r, da_z, da_nh]
// (zeros for a step that is not valid, which leaves dg at zero).
template <class A>
__global__ void gru_cell_grad_kernel(A arith, GateFunctions fns, StepMask mask, const float* gy,
                                     const float* saved, const float* slopes, const float* dh, float* dd,
                                     float* operand, float* dg, int64_t N, int64_t T, int64_t H, int64_t t) {
  EMU_GRID_STRIDE_LOOP(e, N * H) {
    const int64_t n = e / H, j = e % H, row = n * T + t;
    float* op = operand + n * 3 * H + j;
    if (!mask.valid(n, t)) {
      op[0] = op[H] = op[2 * H] = 0.0f;
      continue;
    }
    A a = arith;
    a.at(static_cast<uint64_t>(e));
    const float dh_total = gy ? a.add(gy[row * H + j], dh[e], gru_site::kDh) : dh[e];
    float* g = dg + row * 4 * H + j;
    dd[e] = gru_cell_backward(a, fns, saved + row * 5 * H + j, slopes ? slopes + row * 3 * H + j : nullptr, H,
                              dh_total, g);
    op[0] = g[0], op[H] = g[H], op[2 * H] = g[3 * H];
  }
}

// dh_{t-1}[e] = R(reduction + dd) where step t of the unit's sequence is valid, else dh carried.
template <class A>
__global__ void gru_dh_prev_kernel(A arith, StepMask mask, const float* dh_gates, const float* dd, float* dh,
                                   int64_t N, int64_t H, int64_t t) {
  EMU_GRID_STRIDE_LOOP(e, N * H) {
    if (!mask.valid(e / H, t)) continue;
    A a = arith;
    a.at(static_cast<uint64_t>(e));
    dh[e] = a.add(dh_gates[e], dd[e], gru_site::kDhPrev);
  }
}

}  // namespace

// x (N,T,I), h0 (N,H), w_ih (3H,I), w_hh (3H,H), bias (4H), mask (N,T) -> y (N,T,H), h_n (N,H),
// xh (N,T,I+H), saved (N,T,5H), slopes (N,T,3H), preact (N,T,4H)
void CudaBackend::gru_forward(const MacPolicy& p, const GateFunctions& fns, const Format& act,
                              const Tensor& x, const Tensor& h0, const Tensor& w_ih, const Tensor& w_hh,
                              const Tensor* bias, const Tensor* mask, bool reverse, Tensor& y, Tensor& h_n,
                              Tensor& xh, Tensor& saved, Tensor* slopes, Tensor* preact, DrawKey key) {
  using namespace recurrent;
  OpScope scope("gru_forward");
  const Dims d =
      check_gru_forward(fns.any_pwl(), x, h0, w_ih, w_hh, bias, mask, y, h_n, xh, saved, slopes, preact);
  const int64_t N = d.N, T = d.T, I = d.I, H = d.H, K = I + H;
  float* slp = fns.any_pwl() ? view_of(*slopes).data : nullptr;
  const Tensor xc = x.contiguous(), mc = mask ? mask->contiguous() : Tensor();
  // The three reductions' second operands and biases, contiguous once for all steps.
  const Tensor w = pack_weights(*this, w_ih, w_hh);                        // (K, 3H)
  const Tensor w_rz = w.narrow(1, 0, 2 * H).contiguous();                  // (K, 2H)
  const Tensor w_nx = w.narrow(0, 0, I).narrow(1, 2 * H, H).contiguous();  // (I, H)
  const Tensor w_nh = w.narrow(0, I, H).narrow(1, 2 * H, H).contiguous();  // (H, H)
  Tensor b_rz, b_nx, b_nh;
  if (bias) {
    const Tensor bc = bias->contiguous();
    b_rz = bc.narrow(0, 0, 2 * H), b_nx = bc.narrow(0, 2 * H, H), b_nh = bc.narrow(0, 3 * H, H);
  }
  copy(h0, h_n);
  const StepMask sm{data_or_null(mc), T};
  float* h = view_of(h_n).data;
  float* pa = preact ? view_of(*preact).data : nullptr;
  Tensor rz = Tensor::zeros({N, 2 * H}, Device::Cuda), nx = Tensor::zeros({N, H}, Device::Cuda),
         nh = Tensor::zeros({N, H}, Device::Cuda);
  const Tensor rows = Tensor::zeros({N, K}, Device::Cuda);  // xh[:, t], contiguous
  for (int64_t k = 0; k < T; ++k) {
    const int64_t t = step_time(k, T, reverse);
    const DrawKey step = recurrent_step_key(key, t);
    fill_operand_rows(act, step, gru_site::kReadH, d, view_of(xc).data, t, h, view_of(xh).data,
                      view_of(rows).data);
    // r, z: the input features, then the hidden features, then the bias.
    gemm(p, rows, w_rz, bias ? &b_rz : nullptr, rz, site_key(step, gru_site::kGatesRZ));
    // a_nx over the input features, then b_in; a_nh over the hidden features, then b_hn.
    gemm(p, rows.narrow(1, 0, I), w_nx, bias ? &b_nx : nullptr, nx, site_key(step, gru_site::kGatesNX));
    gemm(p, rows.narrow(1, I, H), w_nh, bias ? &b_nh : nullptr, nh, site_key(step, gru_site::kGatesNH));
    with_arith(p.out, step, [&](auto a) {
      launch_each("gru_cell_kernel", gru_cell_kernel<decltype(a)>, N * H, a, fns, sm,
                  static_cast<const float*>(view_of(rz).data), static_cast<const float*>(view_of(nx).data),
                  static_cast<const float*>(view_of(nh).data), pa, h, view_of(y).data, view_of(saved).data,
                  slp, N, T, H, t);
    });
  }
}

// w_ih (3H,I), w_hh (3H,H), xh (N,T,I+H), saved (N,T,5H), slopes (N,T,3H), gy (N,T,H), gh_n (N,H),
// mask (N,T) -> dx (N,T,I), dw_ih (3H,I), dw_hh (3H,H), dbias (4H), dh0 (N,H)
void CudaBackend::gru_backward(const MacPolicy& p, const GateFunctions& fns, const Tensor& w_ih,
                               const Tensor& w_hh, const Tensor& xh, const Tensor& saved,
                               const Tensor* slopes, const Tensor* gy, const Tensor* gh_n, const Tensor* mask,
                               bool reverse, Tensor* dx, Tensor* dw_ih, Tensor* dw_hh, Tensor* dbias,
                               Tensor& dh0, DrawKey key) {
  using namespace recurrent;
  OpScope scope("gru_backward");
  const Dims d = check_gru_backward(fns.any_pwl(), w_ih, w_hh, xh, saved, slopes, gy, gh_n, mask, dx, dw_ih,
                                    dw_hh, dbias, dh0);
  const int64_t N = d.N, T = d.T, H = d.H, W = 3 * H, G = 4 * H;
  const Tensor slc = fns.any_pwl() ? slopes->contiguous() : Tensor();
  const Tensor whh = w_hh.contiguous(), xhc = xh.contiguous(), sc = saved.contiguous(),
               gyc = gy ? gy->contiguous() : Tensor(), mc = mask ? mask->contiguous() : Tensor();
  if (gh_n)  // dh0 holds the gradient of the state reaching the step being processed
    copy(*gh_n, dh0);
  else
    fill(dh0, 0.0f);
  const Tensor dg = Tensor::zeros({N, T, G}, Device::Cuda);  // [da_r, da_z, da_n, da_nh], row n*T + t
  if (N * H > 0) {
    const StepMask sm{data_or_null(mc), T};
    float* dh = view_of(dh0).data;
    Tensor dd = Tensor::zeros({N, H}, Device::Cuda), dh_gates = Tensor::zeros({N, H}, Device::Cuda);
    Tensor operand = Tensor::zeros({N, W}, Device::Cuda);  // per row: da_r, da_z, da_nh
    for (int64_t k = T - 1; k >= 0; --k) {
      const int64_t t = step_time(k, T, reverse);
      const DrawKey step = recurrent_step_key(key, t);
      with_arith(p.out, step, [&](auto a) {
        launch_each("gru_cell_grad_kernel", gru_cell_grad_kernel<decltype(a)>, N * H, a, fns, sm,
                    data_or_null(gyc), view_of(sc).data, data_or_null(slc), static_cast<const float*>(dh),
                    view_of(dd).data, view_of(operand).data, view_of(dg).data, N, T, H, t);
      });
      // The reduction over the gate units (r, z, n) of [da_r, da_z, da_nh] x W_hh.
      gemm(p, operand, whh, nullptr, dh_gates, site_key(step, gru_site::kGemmH));
      with_arith(p.out, step, [&](auto a) {
        launch_each("gru_dh_prev_kernel", gru_dh_prev_kernel<decltype(a)>, N * H, a, sm,
                    static_cast<const float*>(view_of(dh_gates).data),
                    static_cast<const float*>(view_of(dd).data), dh, N, H, t);
      });
    }
  }
  const SequenceGrads sg{*this, p, d, key};
  const Tensor rows = dg.view({N * T, G});
  const ColumnRange input_units[] = {{0, W}};                   // da_r, da_z, da_n
  const ColumnRange hidden_units[] = {{0, 2 * H}, {3 * H, H}};  // da_r, da_z, da_nh
  sg.input(rows, W, w_ih, dx);                                  // [da_r, da_z, da_n] x W_ih
  sg.weight(rows, input_units, 1, xhc, false, dw_ih);
  sg.weight(rows, hidden_units, 2, xhc, true, dw_hh);
  sg.bias(rows, dbias);
}

}  // namespace emu::EMU_CUDA_NS
