// Cross-entropy and mean squared error on the device (core/backend_ops_elementwise.h),
// with the formulas, sites and orders of numerics/loss_arith.h, the CPU's
// definitions (backends/cpu/loss_ops.cpp).
//
// A row's dot product runs on one thread, term by term; a loss's total over
// rows (or elements) runs on a single thread in ascending order, as the CPU
// adds them up: those orders are the definitions. The per-element steps run one
// thread per element. Targets are checked on the host (the CPU's errors, from
// a downloaded copy); the kernels read the class of a row from the targets
// with the same target_class.
#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/device_lut.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/scratch.h"
#include "core/loss_checks.h"
#include "numerics/element_arith.h"
#include "numerics/loss_arith.h"
#include "numerics/row_reduce.h"

namespace emu::EMU_CUDA_NS {
namespace {

// The target weights q[r, j]: q_on at the row's class, q_off elsewhere
// (ignored rows: q_off, never read); per element.
__global__ void target_weights_kernel(const float* targets, int64_t ignore_index, float q_on, float q_off,
                                      float* q, int64_t n, int64_t C) {
  EMU_GRID_STRIDE_LOOP(i, n) { q[i] = target_class(targets[i / C], C, ignore_index) == i % C ? q_on : q_off; }
}

// row_r = sum_j R_mul(q[r, j] logp[r, j]) in acc (site kRow) for kept rows; one thread per row.
__global__ void ce_rows_kernel(MacRounding dot, bool native, const float* q, const float* logp,
                               const float* targets, int64_t ignore_index, double* rows, int64_t N, int64_t C,
                               int chunk, DrawKey key) {
  EMU_GRID_STRIDE_LOOP(r, N) {
    if (target_class(targets[r], C, ignore_index) < 0) continue;
    rows[r] = row_dot(dot, native, q + r * C, logp + r * C, C, row_draws(key, loss_site::kRow, r, C, chunk));
  }
}

// loss = R_out(total / count) over the kept rows, in ascending order; one thread.
__global__ void ce_loss_kernel(MacPolicy p, const double* rows, const float* targets, int64_t ignore_index,
                               int64_t N, int64_t C, float* loss, DrawKey key) {
  *loss = cross_entropy_loss(
      p, rows, N, [&](int64_t r) { return target_class(targets[r], C, ignore_index) >= 0; }, key);
}

// gx[r, j] = R_g(R_g(R_g(exp(logp)) - q_j) * w), +0 on ignored rows; per element.
template <class A>
__global__ void ce_grad_kernel(A arith, const float* logp, const float* targets, int64_t ignore_index,
                               float q_on, float q_off, float w, float* gx, int64_t n, int64_t C) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t t = target_class(targets[i / C], C, ignore_index);
    if (t < 0) {
      gx[i] = 0.0f;
      continue;
    }
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    gx[i] = cross_entropy_grad(a, logp[i], i % C == t ? q_on : q_off, w);
  }
}

// diff[i] = R_out(x[i] - t[i]); per element.
template <class A>
__global__ void mse_diff_kernel(A arith, const float* x, const float* t, float* diff, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    diff[i] = mse_diff(a, x[i], t[i]);
  }
}

// loss = R_out(sum_i diff_i^2 / n), the sum one reduction in ascending order; one thread.
__global__ void mse_loss_kernel(MacPolicy p, const float* diff, int64_t n, float* loss, DrawKey key) {
  *loss = mse_loss(p, diff, n, key);
}

// gx[i] = R_g(diff[i] * w), gt[i] (when not null) = R_g(-(diff[i] * w)); per element.
template <class A>
__global__ void mse_grad_kernel(A arith, const float* diff, float w, float* gx, float* gt, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    gx[i] = mse_grad(a, diff[i], w);
    if (gt) gt[i] = mse_target_grad(a, diff[i], w);
  }
}

}  // namespace

// logits: (N, C), targets: (N) -> logp: (N, C), loss: ()
void CudaBackend::cross_entropy_forward(const MacPolicy& p, const Tensor& logits, const Tensor& targets,
                                        int64_t ignore_index, float q_on, float q_off, Tensor& logp,
                                        Tensor& loss, DrawKey key) {
  OpScope scope("cross_entropy_forward");
  check_cross_entropy("cross_entropy_forward", "logits", logits, "logp", logp, loss, targets, ignore_index);
  const int64_t N = logits.dim(0), C = logits.dim(1);
  softmax_forward(p, true, logits, logp, key);

  const Tensor tc = targets.contiguous();
  const float* tp = contiguous_data(tc, "targets");
  const float* lp = contiguous_data(logp, "logp");
  const MacPolicy rp = with_device_lut(accumulate_only(p));
  const Tensor q = Tensor::zeros({N, C}, Device::Cuda);
  DeviceArray<double> rows(static_cast<size_t>(N));
  float* qp = contiguous_data(q, "target weights");
  launch_each("target_weights_kernel", target_weights_kernel, N * C, tp, ignore_index, q_on, q_off, qp, N * C,
              C);
  launch_each("ce_rows_kernel", ce_rows_kernel, N, MacRounding(rp), native_dot(rp),
              static_cast<const float*>(qp), lp, tp, ignore_index, rows.get(), N, C, p.chunk, key);
  launch_single("ce_loss_kernel", ce_loss_kernel, p, static_cast<const double*>(rows.get()), tp, ignore_index,
                N, C, view_of(loss).data, key);
}

// logp: (N, C), targets: (N), gloss: () -> glogits: (N, C)
void CudaBackend::cross_entropy_backward(const Format& g, const Tensor& logp, const Tensor& targets,
                                         int64_t ignore_index, float q_on, float q_off, const Tensor& gloss,
                                         Tensor& glogits, DrawKey key) {
  OpScope scope("cross_entropy_backward");
  const std::vector<int64_t> cls = check_cross_entropy("cross_entropy_backward", "logp", logp, "glogits",
                                                       glogits, gloss, targets, ignore_index);
  const int64_t N = logp.dim(0), C = logp.dim(1);
  int64_t count = 0;
  for (int64_t c : cls) count += c >= 0;
  const float w = loss_scale(g, gloss.item(), count, key);
  const int64_t n = N * C;
  if (n == 0) return;
  const Tensor lc = logp.contiguous(), tc = targets.contiguous();
  const float *lp = contiguous_data(lc, "logp"), *tp = contiguous_data(tc, "targets");
  float* out = contiguous_data(glogits, "glogits");
  if (is_plain_fp32(g))
    launch_each("ce_grad_kernel", ce_grad_kernel<Fp32Arith>, n, Fp32Arith{}, lp, tp, ignore_index, q_on,
                q_off, w, out, n, C);
  else
    launch_each("ce_grad_kernel", ce_grad_kernel<ElementArith>, n, ElementArith(g, key.seed, key.stream), lp,
                tp, ignore_index, q_on, q_off, w, out, n, C);
}

// x, target: (n) -> diff: (n), loss: ()
void CudaBackend::mse_forward(const MacPolicy& p, const Tensor& x, const Tensor& target, Tensor& diff,
                              Tensor& loss, DrawKey key) {
  OpScope scope("mse_forward");
  check_mse_forward(x, target, diff, loss);
  const Tensor xc = x.contiguous(), tc = target.contiguous();
  const int64_t n = x.numel();
  float* dp = n ? contiguous_data(diff, "diff") : nullptr;
  if (n > 0) {
    const float *xp = contiguous_data(xc, "x"), *tp = contiguous_data(tc, "target");
    if (is_plain_fp32(p.out))
      launch_each("mse_diff_kernel", mse_diff_kernel<Fp32Arith>, n, Fp32Arith{}, xp, tp, dp, n);
    else
      launch_each("mse_diff_kernel", mse_diff_kernel<ElementArith>, n,
                  ElementArith(p.out, key.seed, key.stream), xp, tp, dp, n);
  }
  // The loss even of no elements (0 / 0 under the policy, as on the CPU).
  launch_single("mse_loss_kernel", mse_loss_kernel, with_device_lut(p), static_cast<const float*>(dp), n,
                view_of(loss).data, key);
}

// diff: (n), gloss: () -> gx: (n), and gtarget: (n) when not null
void CudaBackend::mse_backward(const Format& g, const Tensor& diff, const Tensor& gloss, Tensor& gx,
                               Tensor* gtarget, DrawKey key) {
  OpScope scope("mse_backward");
  check_mse_backward(diff, gloss, gx, gtarget);
  const int64_t n = diff.numel();
  // 2 * gloss is exact in binary64; one rounding for the quotient.
  const float w = loss_scale(g, 2.0 * static_cast<double>(gloss.item()), n, key);
  if (n == 0) return;
  const Tensor dc = diff.contiguous();
  const float* dp = contiguous_data(dc, "diff");
  float* out = contiguous_data(gx, "gx");
  float* out_t = gtarget ? contiguous_data(*gtarget, "gtarget") : nullptr;
  if (is_plain_fp32(g))
    launch_each("mse_grad_kernel", mse_grad_kernel<Fp32Arith>, n, Fp32Arith{}, dp, w, out, out_t, n);
  else
    launch_each("mse_grad_kernel", mse_grad_kernel<ElementArith>, n, ElementArith(g, key.seed, key.stream),
                dp, w, out, out_t, n);
}

}  // namespace emu::EMU_CUDA_NS
