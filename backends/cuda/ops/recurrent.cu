// LSTM and GRU on the device (EMU_OPS_RECURRENT): what both ops share
// (recurrent_common.h). The ops themselves are recurrent_lstm.cu and
// recurrent_gru.cu; the CPU reference is backends/cpu/recurrent_ops.cpp.
//
// Design: the time loop stays on the host, as on the CPU (each step needs the
// previous step's state). A forward step is one launch that writes the operand
// rows xh[:, t], the gate reductions through the gemm op, and one fused cell
// kernel, one thread per unit (n, j), calling numerics/recurrent_cells.h. A
// backward step is the cell-gradient kernel, the hidden-state reduction through
// gemm and a carry kernel; after the steps, the input, weight and bias
// gradients are gemms over the whole sequence. No reduction is split across
// threads or uses atomics: every sum is gemm's ascending chain per output.
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/recurrent_common.h"
#include "numerics/element_arith.h"
#include "numerics/recurrent_cells.h"
#include "numerics/recurrent_sums.h"

namespace emu::EMU_CUDA_NS {
namespace recurrent {
namespace {

// xh[n, t, k] = x[n, t, k] (k < I) or R_act(h[n, k - I]) drawing at n*H + (k - I), and the same
// value at rows[n, k]; per element of the N x (I+H) rows.
template <class A>
__global__ void operand_rows_kernel(A arith, uint32_t site, const float* x, const float* h, float* xh,
                                    float* rows, int64_t N, int64_t T, int64_t I, int64_t H, int64_t t) {
  const int64_t K = I + H;
  EMU_GRID_STRIDE_LOOP(i, N * K) {
    const int64_t n = i / K, k = i % K;
    float v;
    if (k < I) {
      v = x[(n * T + t) * I + k];
    } else {
      A a = arith;
      a.at(static_cast<uint64_t>(n * H + k - I));
      v = a.round(h[n * H + k - I], site);
    }
    xh[(n * T + t) * K + k] = v;
    rows[i] = v;
  }
}

}  // namespace

// w_ih (GH, I), w_hh (GH, H), any views -> (I+H, GH): two strided copies into the halves.
Tensor pack_weights(CudaBackend& be, const Tensor& w_ih, const Tensor& w_hh) {
  const int64_t GH = w_ih.dim(0), I = w_ih.dim(1), H = w_hh.dim(1);
  Tensor w = Tensor::zeros({I + H, GH}, Device::Cuda);
  Tensor top = w.narrow(0, 0, I), bottom = w.narrow(0, I, H);
  if (I > 0 && GH > 0) be.copy(w_ih.transpose(0, 1), top);
  if (H > 0 && GH > 0) be.copy(w_hh.transpose(0, 1), bottom);
  return w;
}

void fill_operand_rows(const Format& act, DrawKey step, uint32_t site, const Dims& d, const float* x,
                       int64_t t, const float* h, float* xh, float* rows) {
  const int64_t n = d.N * (d.I + d.H);
  if (is_plain_fp32(act))  // Fp32Arith's round is the identity: the CPU's copy
    launch_each("operand_rows_kernel", operand_rows_kernel<Fp32Arith>, n, Fp32Arith{}, site, x, h, xh, rows,
                d.N, d.T, d.I, d.H, t);
  else
    launch_each("operand_rows_kernel", operand_rows_kernel<ElementArith>, n,
                ElementArith(act, step.seed, step.stream), site, x, h, xh, rows, d.N, d.T, d.I, d.H, t);
}

// dx (N*T, I) = dg[:, :x_cols] (N*T, x_cols) x w_ih (x_cols, I).
void SequenceGrads::input(const Tensor& dg, int64_t x_cols, const Tensor& w_ih, Tensor* dx) const {
  if (!dx) return;
  Tensor out = dx->view({d.N * d.T, d.I});
  be.gemm(p, dg.narrow(1, 0, x_cols), w_ih, nullptr, out, site_key(key, recurrent_site::kGradX));
}

// dw (cols of the ranges, I or H) = the ranges' gate columns transposed (units, N*T) x xh's input or
// hidden features (N*T, I or H): each weight gradient a reduction over the rows (n, t) ascending.
void SequenceGrads::weight(const Tensor& dg, const ColumnRange* ranges, int nranges, const Tensor& xh,
                           bool hidden, Tensor* dw) const {
  if (!dw) return;
  const int64_t rows = d.N * d.T;
  Tensor dgt = Tensor::zeros({dw->dim(0), rows}, Device::Cuda);
  int64_t c = 0;
  for (int r = 0; r < nranges; ++r) {
    Tensor part = dgt.narrow(0, c, ranges[r].count);
    if (ranges[r].count > 0 && rows > 0)
      be.copy(dg.narrow(1, ranges[r].first, ranges[r].count).transpose(0, 1), part);
    c += ranges[r].count;
  }
  const Tensor features = xh.view({rows, d.I + d.H}).narrow(1, hidden ? d.I : 0, hidden ? d.H : d.I);
  be.gemm(p, dgt, features, nullptr, *dw,
          site_key(key, hidden ? recurrent_site::kGradWhh : recurrent_site::kGradWih));
}

// dbias (cols) = ones (1, N*T) x dg (N*T, cols) under recurrent_bias_policy.
void SequenceGrads::bias(const Tensor& dg, Tensor* dbias) const {
  if (!dbias) return;
  const int64_t rows = d.N * d.T, cols = dg.dim(1);
  const Tensor ones = Tensor::full({1, rows}, 1.0f, Device::Cuda);
  Tensor out = dbias->view({1, cols});
  be.gemm(recurrent_bias_policy(p), ones, dg, nullptr, out, site_key(key, recurrent_site::kGradBias));
}

}  // namespace recurrent
}  // namespace emu::EMU_CUDA_NS
