// Cross-entropy and mean squared error on the CPU. The formulas, rounding
// sites, draw indices and the order of the cross-row totals are
// numerics/loss_arith.h's (with the log-softmax of softmax_forward), which the
// CUDA kernels call too; this file only lays the rows and elements out over the
// thread pool. The losses' exp is always exact: the loss is the training
// objective, not the modelled hardware, so functions.softmax_exp: pwl does not
// apply (docs/functions.md).
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/row_ops.h"
#include "core/loss_checks.h"
#include "numerics/functions_lanes.h"
#include "numerics/loss_arith.h"

namespace emu {

namespace {

template <class A>
void ce_grad_rows(A a, const float* logp, const std::vector<int64_t>& cls, float q_on, float q_off, float w,
                  float* gx, int64_t C, int64_t r0, int64_t r1) {
  std::vector<float> ex(static_cast<size_t>(C));  // fn_exp(logp_j) of a row
  for (int64_t r = r0; r < r1; ++r) {
    const float* lr = logp + r * C;
    float* out = gx + r * C;
    const int64_t t = cls[static_cast<size_t>(r)];
    if (t < 0) {
      std::fill(out, out + C, 0.0f);
      continue;
    }
    fn_exp_array(lr, ex.data(), C);  // eight lanes at a time
    for (int64_t j = 0; j < C; ++j) {
      a.at(static_cast<uint64_t>(r * C + j));
      out[j] = cross_entropy_grad_of_exp(a, ex[j], j == t ? q_on : q_off, w);
    }
  }
}

template <class A>
void sub_values(A a, const float* x, const float* t, float* d, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    a.at(static_cast<uint64_t>(i));
    d[i] = mse_diff(a, x[i], t[i]);
  }
}

// gt may be null.
template <class A>
void scale_values(A a, const float* d, float w, float* gx, float* gt, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    a.at(static_cast<uint64_t>(i));
    gx[i] = mse_grad(a, d[i], w);
    if (gt) gt[i] = mse_target_grad(a, d[i], w);
  }
}

}  // namespace

// logits: (N, C), targets: (N) -> logp: (N, C), loss: ()
void CpuBackend::cross_entropy_forward(const MacPolicy& p, const Tensor& logits, const Tensor& targets,
                                       int64_t ignore_index, float q_on, float q_off, Tensor& logp,
                                       Tensor& loss, DrawKey key) {
  using namespace loss_site;
  const std::vector<int64_t> cls = check_cross_entropy("cross_entropy_forward", "logits", logits, "logp",
                                                       logp, loss, targets, ignore_index);
  const int64_t N = logits.dim(0), C = logits.dim(1);
  softmax_forward(p, true, logits, logp, key);

  const MacPolicy rp = accumulate_only(p);
  const MacRounding row_policy(rp);
  const bool native = native_dot(rp);
  const float* lp = logp.data();
  std::vector<double> rows(static_cast<size_t>(N), 0.0);
  parallel_for(N, threads_, cpu_rows::row_grain(C), [&](int64_t r0, int64_t r1) {
    std::vector<float> q(static_cast<size_t>(C), q_off);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t t = cls[static_cast<size_t>(r)];
      if (t < 0) continue;
      q[static_cast<size_t>(t)] = q_on;
      rows[static_cast<size_t>(r)] =
          row_dot(row_policy, native, q.data(), lp + r * C, C, row_draws(key, kRow, r, C, p.chunk));
      q[static_cast<size_t>(t)] = q_off;
    }
  });
  loss.data()[0] = cross_entropy_loss(
      p, rows.data(), N, [&](int64_t r) { return cls[static_cast<size_t>(r)] >= 0; }, key);
}

// logp: (N, C), targets: (N), gloss: () -> glogits: (N, C)
void CpuBackend::cross_entropy_backward(const Format& g, const Tensor& logp, const Tensor& targets,
                                        int64_t ignore_index, float q_on, float q_off, const Tensor& gloss,
                                        Tensor& glogits, DrawKey key) {
  const std::vector<int64_t> cls = check_cross_entropy("cross_entropy_backward", "logp", logp, "glogits",
                                                       glogits, gloss, targets, ignore_index);
  const int64_t N = logp.dim(0), C = logp.dim(1);
  const int64_t count = std::count_if(cls.begin(), cls.end(), [](int64_t c) { return c >= 0; });
  const float w = loss_scale(g, gloss.item(), count, key);
  Tensor lc = logp.contiguous();
  const float* lp = lc.data();
  float* out = glogits.data();
  const ElementArith arith(g, key.seed, key.stream);
  const bool plain = is_plain_fp32(g);
  parallel_for(N, threads_, cpu_rows::row_grain(C), [&](int64_t r0, int64_t r1) {
    if (plain)
      ce_grad_rows(Fp32Arith{}, lp, cls, q_on, q_off, w, out, C, r0, r1);
    else
      ce_grad_rows(arith, lp, cls, q_on, q_off, w, out, C, r0, r1);
  });
}

// x, target: (n) -> diff: (n), loss: ()
void CpuBackend::mse_forward(const MacPolicy& p, const Tensor& x, const Tensor& target, Tensor& diff,
                             Tensor& loss, DrawKey key) {
  check_mse_forward(x, target, diff, loss);
  Tensor xc = x.contiguous(), tc = target.contiguous();
  const float *xp = xc.data(), *tp = tc.data();
  float* dp = diff.data();
  const int64_t n = x.numel();
  const ElementArith arith(p.out, key.seed, key.stream);
  const bool plain = is_plain_fp32(p.out);
  parallel_for(n, threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
    if (plain)
      sub_values(Fp32Arith{}, xp, tp, dp, lo, hi);
    else
      sub_values(arith, xp, tp, dp, lo, hi);
  });
  loss.data()[0] = mse_loss(p, dp, n, key);
}

// diff: (n), gloss: () -> gx: (n)
void CpuBackend::mse_backward(const Format& g, const Tensor& diff, const Tensor& gloss, Tensor& gx,
                              Tensor* gtarget, DrawKey key) {
  check_mse_backward(diff, gloss, gx, gtarget);
  const int64_t n = diff.numel();
  // 2 * gloss is exact in binary64; one rounding for the quotient.
  const float w = loss_scale(g, 2.0 * static_cast<double>(gloss.item()), n, key);
  Tensor dc = diff.contiguous();
  const float* dp = dc.data();
  float* out = gx.data();
  float* out_t = gtarget ? gtarget->data() : nullptr;
  const ElementArith arith(g, key.seed, key.stream);
  const bool plain = is_plain_fp32(g);
  parallel_for(n, threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
    if (plain)
      scale_values(Fp32Arith{}, dp, w, out, out_t, lo, hi);
    else
      scale_values(arith, dp, w, out, out_t, lo, hi);
  });
}

}  // namespace emu
