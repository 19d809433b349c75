#include "layers/sparse_matmul.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/autograd.h"
#include "core/comm_reduce.h"
#include "layers/layer_io.h"

namespace emu {
namespace {

DrawKey stage_key(const Module& m, DrawSite site, uint32_t stage) {
  return nn_stage_key(draw_key(m, site), stage);
}

// y = a b (+ bias) with b given as (N, K) and transposed first when `b_transposed`
// (a weight stored (out, in), as Linear keeps it); its gradient is handed back in b's layout.
Tensor product(const Module& m, std::shared_ptr<const CsrMatrix> a, const Tensor& b, bool b_transposed,
               const Tensor& bias, SparseOperands operands, uint32_t stage, const char* op) {
  if (!a) throw std::invalid_argument(fmt::format("{}: {}: the sparse operand is null", m.path(), op));
  // The op validates the matrix itself (once per call: O(nnz), a fraction of the product's cost).
  const int64_t k_dim = b_transposed ? 1 : 0;
  if (b.ndim() != 2 || b.dim(static_cast<int>(k_dim)) != a->cols)
    throw std::invalid_argument(fmt::format("{}: {}: sparse operand {} x {} and dense operand {}{}", m.path(),
                                            op, a->rows, a->cols, shape_string(b.shape()),
                                            b_transposed ? " (used transposed)" : ""));
  const int64_t rows = a->rows, n = b.dim(static_cast<int>(1 - k_dim));
  if (bias.defined() && (bias.ndim() != 1 || bias.numel() != n))
    throw std::invalid_argument(
        fmt::format("{}: {}: bias of shape {} for {} columns", m.path(), op, shape_string(bias.shape()), n));

  const LayerNumerics& nm = m.numerics();
  const LayerNumerics cn = compute_numerics(nm);
  Backend& be = backend_for(b.device());
  const bool a_constant = operands == SparseOperands::ConstantTimesInput;
  const Format& a_format = a_constant ? cn.weights : cn.activations;
  const Format& b_format = a_constant ? cn.activations : cn.weights;
  const DrawSite a_site = a_constant ? DrawSite::ReadWeights : DrawSite::ReadInput;
  const DrawSite b_site = a_constant ? DrawSite::ReadInput : DrawSite::ReadWeights;

  std::shared_ptr<const CsrMatrix> ar = read_csr(a_format, a, stage_key(m, a_site, stage));
  // b is the weight when the sparse operand is the input: read it as a weight (N:M masks along
  // the reduction over K, faults); b (out, in) when transposed, else (K, N) reduced down columns.
  Tensor br = a_constant ? read_as(b_format, b, stage_key(m, b_site, stage))
                         : read_weight(m, cn, b, stage_key(m, b_site, stage),
                                       b_transposed ? ReadLayout{b.dim(0), b.dim(1), 1}
                                                    : ReadLayout{1, b.dim(0), b.dim(1)});
  if (b_transposed) br = br.transpose(0, 1);
  br = br.contiguous();  // (K, N)
  Tensor biasr =
      bias.defined() ? read_as(cn.weights, bias, stage_key(m, DrawSite::ReadBias, stage)) : Tensor();
  Tensor y = Tensor::zeros({rows, n}, b.device());
  be.spmm(cn.mac, *ar, br, biasr.defined() ? &biasr : nullptr, y, stage_key(m, DrawSite::Forward, stage));
  finish_output(nm, y, stage_key(m, DrawSite::Forward, stage));
  hook_output(m, nm, y);

  const Module* mp = &m;
  const DrawSite b_grad_site = a_constant ? DrawSite::GradInput : DrawSite::GradWeight;
  record_lambda(y, op, {b, bias}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& nm = mp->numerics();
    const LayerNumerics cn = compute_numerics(nm);
    Backend& be = backend_for(gy.device());
    // g (R, N): the backward reduces over its rows R, so N:M groups run down each column.
    Tensor g = read_grad(*mp, cn, gy.contiguous(), stage_key(*mp, DrawSite::ReadGrad, stage),
                         ReadLayout{1, rows, n});
    Tensor gb, gbias;
    if (b.requires_grad()) {
      // a^T: (K x R), g: (R, N) -> (K, N), each output reduced over a's rows in ascending order.
      const DrawKey key = stage_key(*mp, b_grad_site, stage);
      gb = Tensor::zeros({ar->cols, n}, gy.device());
      if (a_constant) {
        be.spmm_transposed(backward_mac(cn), *ar, g, gb, key);
      } else {
        // A weight gradient: a reduction over a's rows, split by rank shares under data
        // parallelism (core/comm_reduce.h); rows outside a run are zero operands (skipped).
        reduce_over_rows(backward_mac(cn), rows, gb, mp->path() + " grad-weight",
                         [&](const MacPolicy& p, int64_t k0, int64_t k1, Tensor& o) {
                           be.spmm_transposed(p, *ar, rows_outside_zeroed(g, k0, k1), o, key);
                         });
      }
      finish_grad(nm, gb, key);
      if (b_transposed) gb = gb.transpose(0, 1).contiguous();
    }
    if (bias.defined() && bias.requires_grad()) {
      // g^T: (N, R) x ones (R, 1) -> (N, 1): a plain sum over the rows, as Linear's bias gradient.
      const DrawKey key = stage_key(*mp, DrawSite::GradBias, stage);
      Tensor gt = g.transpose(0, 1).contiguous();
      Tensor gb2 = Tensor::zeros({n, 1}, gy.device());
      reduce_over_rows(
          sum_mac(cn), rows, gb2, mp->path() + " bias-grad",
          [&](const MacPolicy& p, int64_t k0, int64_t k1, Tensor& o) {
            Tensor a = k0 == 0 && k1 == rows ? gt : g.narrow(0, k0, k1 - k0).transpose(0, 1).contiguous();
            be.gemm(p, a, Tensor::full({k1 - k0, 1}, 1.0f, gy.device()), nullptr, o, key);
          });
      finish_grad(nm, gb2, key);
      gbias = gb2.view({n});
    }
    return {gb, gbias};
  });
  return y;
}

}  // namespace

std::shared_ptr<const CsrMatrix> read_csr(const Format& f, std::shared_ptr<const CsrMatrix> a, DrawKey key) {
  if (is_plain_fp32(f)) return a;
  if (!a->values.defined()) throw std::invalid_argument("read_csr: the matrix has no values");
  return std::make_shared<const CsrMatrix>(csr_with_values(*a, read_as(f, a->values.contiguous(), key)));
}

Tensor sparse_matmul(const Module& m, std::shared_ptr<const CsrMatrix> a, const Tensor& b, const Tensor& bias,
                     SparseOperands operands, uint32_t stage) {
  return product(m, std::move(a), b, false, bias, operands, stage, "sparse_matmul");
}

Tensor sparse_matmul(const Module& m, const CsrMatrix& a, const Tensor& b, const Tensor& bias,
                     SparseOperands operands, uint32_t stage) {
  return sparse_matmul(m, std::make_shared<const CsrMatrix>(a), b, bias, operands, stage);
}

Tensor sparse_linear(const Module& m, std::shared_ptr<const CsrMatrix> x, const Tensor& weight,
                     const Tensor& bias, uint32_t stage) {
  return product(m, std::move(x), weight, true, bias, SparseOperands::InputTimesParameter, stage,
                 "sparse_linear");
}

}  // namespace emu
