// What the LSTM (recurrent_lstm.cu) and GRU (recurrent_gru.cu) ops of the
// device share, defined in recurrent.cu: the operand rows xh of a step, the
// packed weights of the step reductions, and the backward's whole-sequence
// reductions. The argument checks are core/recurrent_checks.h, the CPU's.
//
// Every reduction runs through the backend's public gemm op on device views
// (core/backend_ops_dense.h): gemm reduces a[i,:] against b[:,j] in ascending k,
// adds the bias inside the reduction, then R_out, and draws output o = i*cols + j
// at o * mac_site_count(K, chunk) + site, exactly what the CPU's mac_gemm does
// with the same operands (core/backend_ops_recurrent.h, "Draws"). So a step
// reduction here is bit for bit the CPU's as long as it passes gemm the same
// rows, columns, bias and stream.
#pragma once

#include <cstdint>

#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "core/backend_ops_recurrent.h"
#include "core/recurrent_checks.h"
#include "numerics/element_arith.h"

namespace emu::EMU_CUDA_NS::recurrent {

using Dims = RecurrentDims;

// A tensor's contiguous device pointer, or null for an undefined tensor.
inline const float* data_or_null(const Tensor& t) { return t.defined() ? view_of(t).data : nullptr; }

// Whether step t of sequence n is valid (mask (N,T) or null: every step); a kernel argument.
struct StepMask {
  const float* m;
  int64_t T;
  EMU_HD bool valid(int64_t n, int64_t t) const { return !m || m[n * T + t] != 0.0f; }
};

// The time index of the k-th step a direction processes.
inline int64_t step_time(int64_t k, int64_t T, bool reverse) { return reverse ? T - 1 - k : k; }

// The draw key of site `site` of a step: its stream + site.
inline DrawKey site_key(DrawKey step, uint32_t site) { return DrawKey{step.seed, step.stream + site}; }

// body(a) with the element arithmetic of format f as the CPU's for_units picks it:
// native binary32 (Fp32Arith) for plain fp32, else ElementArith drawing from `step`.
template <class Body>
void with_arith(const Format& f, DrawKey step, const Body& body) {
  if (is_plain_fp32(f))
    body(Fp32Arith{});
  else
    body(ElementArith(f, step.seed, step.stream));
}

// B (I+H, G*H) = [w_ih | w_hh]^T, contiguous on the device: the forward reductions' second operand.
Tensor pack_weights(CudaBackend& be, const Tensor& w_ih, const Tensor& w_hh);

// xh[:, t] (N rows of I+H) = [x[:, t, :], R_act(h)]; R_act of element (n, j) draws at
// n*H + j of `site` of the step (plain fp32: a copy). The same rows also go to
// `rows` (N, I+H) contiguous: the step reductions' first operand, which gemm then
// reads without a copy of the strided xh[:, t]. x (N,T,I) and h (N,H) contiguous.
void fill_operand_rows(const Format& act, DrawKey step, uint32_t site, const Dims& d, const float* x,
                       int64_t t, const float* h, float* xh, float* rows);

// The backward's reductions over the whole sequence from the gate gradients dg
// (N*T rows of G = 4H, row n*T + t, contiguous on the device), as the CPU's
// SequenceGrads: dx over the first x_cols gate units of each row, dw_ih / dw_hh
// over the rows (n, t) of the gate units in the given column ranges, dbias the
// plain sums of every column. Each does nothing for a null output.
struct ColumnRange {
  int64_t first, count;
};
struct SequenceGrads {
  CudaBackend& be;
  const MacPolicy& p;
  const Dims& d;
  DrawKey key;

  void input(const Tensor& dg, int64_t x_cols, const Tensor& w_ih, Tensor* dx) const;
  void weight(const Tensor& dg, const ColumnRange* ranges, int nranges, const Tensor& xh, bool hidden,
              Tensor* dw) const;
  void bias(const Tensor& dg, Tensor* dbias) const;
};

}  // namespace emu::EMU_CUDA_NS::recurrent
