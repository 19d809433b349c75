// Cross-entropy and mean squared error on the CPU.
//
// cross_entropy_forward, logits (N, C), targets (N):
//   logp = log_softmax(logits)                  as softmax_forward(p, log = true), sites 0..4; its exp
//                                               (and the backward's) always exact: the loss is the
//                                               training objective, not the modelled hardware, so
//                                               functions.softmax_exp: pwl does not apply (docs/functions.md)
//   row_i = sum_j R_mul(q_j logp_ij) in acc     ascending j, numerics/mac.h (zero terms skipped),
//                                               site kRow, index i*sites(C) + mac site
//   total = sum_i -row_i in acc                 ascending i over kept rows, site kTotal, index i
//   loss = R_out(total / count)                 correctly rounded, site kMean, index 0
// with q_t = q_on for the target class t and q_j = q_off otherwise; rows whose
// target equals ignore_index are skipped and not counted.
// cross_entropy_backward, g = grads format, gloss the incoming gradient:
//   w = R_g(gloss / count)                      site kScale, index 0
//   gx_ij = R_g(R_g(R_g(exp(logp_ij)) - q_j) * w)  sites kProb, kDiff, kGrad, index i*C + j
//   gx_ij = +0 on ignored rows
// mse_forward, x and target (n):
//   diff_i = R_out(x_i - t_i)                   site kMseDiff, index i
//   total = sum_i R_mul(diff_i diff_i) in acc   ascending i, numerics/mac.h, site kMseSum (row 0)
//   loss = R_out(total / n)                     site kMseMean, index 0
// mse_backward:
//   w = R_g(2 gloss / n)                        site kScale, index 0
//   gx_i = R_g(diff_i * w)                      site kGrad, index i
//   gtarget_i = R_g(-(diff_i * w))              site kTargetGrad, index i (when asked for)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/row_ops.h"

namespace emu {

// backends/cpu/elementwise_ops.cpp

namespace {

using cpu_rows::row_grain;


struct SiteDraws {
  uint64_t seed, stream, base;
  uint32_t operator()(uint64_t site) const { return philox_draw(seed, stream, base + site); }
};

uint32_t draw_at(const Format& f, DrawKey key, uint32_t site, uint64_t index) {
  return is_stochastic(f) ? philox_draw(key.seed, key.stream + site, index) : 0u;
}

// The reduction's policy with its result left in the accumulator's own format.
MacPolicy accumulate_only(const MacPolicy& p) {
  MacPolicy s = p;
  s.out = p.chunk > 0 ? p.acc_outer : p.acc;
  return s;
}

// Whether native binary32 multiply-adds give mac_reduce's bits.
bool native_dot(const MacPolicy& p) {
  return !p.mul_exact && is_plain_fp32(p.mul) && is_plain_fp32(p.acc) && p.chunk == 0;
}

double dot(const MacRounding& acc_policy, bool native, const float* a, const float* b, int64_t K,
           const SiteDraws& draws) {
  if (native) {
    float acc = 0.0f;
    for (int64_t k = 0; k < K; ++k)
      if (a[k] != 0.0f && b[k] != 0.0f) acc = fp32_op::add(acc, fp32_op::mul(a[k], b[k]));
    return acc;
  }
  return acc_policy.reduce(a, b, K, draws);
}

// Targets as row classes: -1 for an ignored row. Throws on anything else that is
// not a class index in [0, C).
std::vector<int64_t> row_classes(const char* op, const Tensor& targets, int64_t N, int64_t C, int64_t ignore_index) {
  if (targets.ndim() != 1 || targets.dim(0) != N)
    throw std::invalid_argument(
        fmt::format("{}: targets of shape {} for {} rows (want ({},))", op, shape_string(targets.shape()), N, N));
  std::vector<float> t = targets.to_vector();
  std::vector<int64_t> cls(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) {
    const double v = t[static_cast<size_t>(i)];
    const bool integral = std::isfinite(v) && v == std::floor(v);
    if (integral && v == static_cast<double>(ignore_index)) {
      cls[static_cast<size_t>(i)] = -1;
    } else if (integral && v >= 0 && v < static_cast<double>(C)) {
      cls[static_cast<size_t>(i)] = static_cast<int64_t>(v);
    } else {
      throw std::invalid_argument(fmt::format("{}: target {} of row {} is not a class index in [0, {}) nor "
                                              "ignore_index {}",
                                              op, t[static_cast<size_t>(i)], i, C, ignore_index));
    }
  }
  return cls;
}

template <class A>
void ce_grad_rows(A a, const float* logp, const std::vector<int64_t>& cls, float q_on, float q_off, float w,
                  float* gx, int64_t C, int64_t r0, int64_t r1) {
  using namespace loss_site;
  for (int64_t r = r0; r < r1; ++r) {
    const float* lr = logp + r * C;
    float* out = gx + r * C;
    const int64_t t = cls[static_cast<size_t>(r)];
    if (t < 0) {
      std::fill(out, out + C, 0.0f);
      continue;
    }
    for (int64_t j = 0; j < C; ++j) {
      a.at(static_cast<uint64_t>(r * C + j));
      const float prob = a.round(fn_exp(lr[j]), kProb);
      out[j] = a.mul(a.sub(prob, j == t ? q_on : q_off, kDiff), w, kGrad);
    }
  }
}

template <class A>
void sub_values(A a, const float* x, const float* t, float* d, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    a.at(static_cast<uint64_t>(i));
    d[i] = a.sub(x[i], t[i], loss_site::kMseDiff);
  }
}

// gx = R(d * w); gt (may be null) = R(-(d * w)), the exact product negated before its rounding.
template <class A>
void scale_values(A a, const float* d, float w, float* gx, float* gt, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    a.at(static_cast<uint64_t>(i));
    gx[i] = a.mul(d[i], w, loss_site::kGrad);
    if (gt) gt[i] = a.mul(-d[i], w, loss_site::kTargetGrad);
  }
}

void check_scalar_out(const char* op, const Tensor& t) {
  if (t.numel() != 1) throw std::invalid_argument(fmt::format("{}: the loss must have one element", op));
}

}  // namespace

// logits: (N, C), targets: (N) -> logp: (N, C), loss: ()
void CpuBackend::cross_entropy_forward(const MacPolicy& p, const Tensor& logits, const Tensor& targets,
                                       int64_t ignore_index, float q_on, float q_off, Tensor& logp, Tensor& loss,
                                       DrawKey key) {
  using namespace loss_site;
  if (logits.ndim() != 2 || logp.shape() != logits.shape() || !logp.is_contiguous())
    throw std::invalid_argument(fmt::format("cross_entropy_forward: logits {} -> logp {}: want (N, C) both",
                                            shape_string(logits.shape()), shape_string(logp.shape())));
  check_scalar_out("cross_entropy_forward", loss);
  const int64_t N = logits.dim(0), C = logits.dim(1);
  const std::vector<int64_t> cls = row_classes("cross_entropy_forward", targets, N, C, ignore_index);
  softmax_forward(p, true, logits, logp, key);

  const MacRounding rp(accumulate_only(p));
  const bool native = native_dot(p);
  const float* lp = logp.data();
  std::vector<double> rows(static_cast<size_t>(N), 0.0);
  parallel_for(N, threads_, row_grain(C), [&](int64_t r0, int64_t r1) {
    std::vector<float> q(static_cast<size_t>(C), q_off);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t t = cls[static_cast<size_t>(r)];
      if (t < 0) continue;
      q[static_cast<size_t>(t)] = q_on;
      const SiteDraws draws{key.seed, key.stream + kRow, static_cast<uint64_t>(r) * mac_site_count(C, p.chunk)};
      rows[static_cast<size_t>(r)] = dot(rp, native, q.data(), lp + r * C, C, draws);
      q[static_cast<size_t>(t)] = q_off;
    }
  });
  double total = 0.0;  // +0 in acc
  int64_t count = 0;
  for (int64_t r = 0; r < N; ++r) {
    if (cls[static_cast<size_t>(r)] < 0) continue;
    ++count;
    total = add_into(p.acc, total, -rows[static_cast<size_t>(r)], draw_at(p.acc, key, kTotal, static_cast<uint64_t>(r)));
  }
  loss.data()[0] =
      static_cast<float>(format_div(p.out, total, static_cast<double>(count), draw_at(p.out, key, kMean, 0)));
}

// logp: (N, C), targets: (N), gloss: () -> glogits: (N, C)
void CpuBackend::cross_entropy_backward(const Format& g, const Tensor& logp, const Tensor& targets,
                                        int64_t ignore_index, float q_on, float q_off, const Tensor& gloss,
                                        Tensor& glogits, DrawKey key) {
  using namespace loss_site;
  if (logp.ndim() != 2 || glogits.shape() != logp.shape() || !glogits.is_contiguous())
    throw std::invalid_argument(fmt::format("cross_entropy_backward: logp {} -> glogits {}: want (N, C) both",
                                            shape_string(logp.shape()), shape_string(glogits.shape())));
  check_scalar_out("cross_entropy_backward", gloss);
  const int64_t N = logp.dim(0), C = logp.dim(1);
  const std::vector<int64_t> cls = row_classes("cross_entropy_backward", targets, N, C, ignore_index);
  const int64_t count = std::count_if(cls.begin(), cls.end(), [](int64_t c) { return c >= 0; });
  const float w = static_cast<float>(
      format_div(g, gloss.item(), static_cast<double>(count), draw_at(g, key, kScale, 0)));
  Tensor lc = logp.contiguous();
  const float* lp = lc.data();
  float* out = glogits.data();
  const ElementArith arith(g, key.seed, key.stream);
  const bool plain = is_plain_fp32(g);
  parallel_for(N, threads_, row_grain(C), [&](int64_t r0, int64_t r1) {
    if (plain) ce_grad_rows(Fp32Arith{}, lp, cls, q_on, q_off, w, out, C, r0, r1);
    else ce_grad_rows(arith, lp, cls, q_on, q_off, w, out, C, r0, r1);
  });
}

// x, target: (n) -> diff: (n), loss: ()
void CpuBackend::mse_forward(const MacPolicy& p, const Tensor& x, const Tensor& target, Tensor& diff, Tensor& loss,
                             DrawKey key) {
  using namespace loss_site;
  if (x.shape() != target.shape() || x.shape() != diff.shape() || !diff.is_contiguous())
    throw std::invalid_argument(fmt::format("mse_forward: input {}, target {}, diff {}: want one shape",
                                            shape_string(x.shape()), shape_string(target.shape()),
                                            shape_string(diff.shape())));
  check_scalar_out("mse_forward", loss);
  Tensor xc = x.contiguous(), tc = target.contiguous();
  const float *xp = xc.data(), *tp = tc.data();
  float* dp = diff.data();
  const int64_t n = x.numel();
  const ElementArith arith(p.out, key.seed, key.stream);
  const bool plain = is_plain_fp32(p.out);
  parallel_for(n, threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
    if (plain) sub_values(Fp32Arith{}, xp, tp, dp, lo, hi);
    else sub_values(arith, xp, tp, dp, lo, hi);
  });
  const double total =
      dot(MacRounding(accumulate_only(p)), native_dot(p), dp, dp, n, SiteDraws{key.seed, key.stream + kMseSum, 0});
  loss.data()[0] =
      static_cast<float>(format_div(p.out, total, static_cast<double>(n), draw_at(p.out, key, kMseMean, 0)));
}

// diff: (n), gloss: () -> gx: (n)
void CpuBackend::mse_backward(const Format& g, const Tensor& diff, const Tensor& gloss, Tensor& gx, Tensor* gtarget,
                              DrawKey key) {
  using namespace loss_site;
  if (diff.shape() != gx.shape() || !gx.is_contiguous() ||
      (gtarget && (gtarget->shape() != diff.shape() || !gtarget->is_contiguous())))
    throw std::invalid_argument(fmt::format("mse_backward: diff {} -> gx {}", shape_string(diff.shape()),
                                            shape_string(gx.shape())));
  check_scalar_out("mse_backward", gloss);
  const int64_t n = diff.numel();
  // 2 * gloss is exact in binary64; one rounding for the quotient.
  const float w = static_cast<float>(
      format_div(g, 2.0 * static_cast<double>(gloss.item()), static_cast<double>(n), draw_at(g, key, kScale, 0)));
  Tensor dc = diff.contiguous();
  const float* dp = dc.data();
  float* out = gx.data();
  float* out_t = gtarget ? gtarget->data() : nullptr;
  const ElementArith arith(g, key.seed, key.stream);
  const bool plain = is_plain_fp32(g);
  parallel_for(n, threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
    if (plain) scale_values(Fp32Arith{}, dp, w, out, out_t, lo, hi);
    else scale_values(arith, dp, w, out, out_t, lo, hi);
  });
}

}  // namespace emu
