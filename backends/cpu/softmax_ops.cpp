// Softmax and log-softmax over the last dimension on the CPU, threaded over rows.
//
// Row r of (rows, C), forward, in the order written (docs/layers_elementwise.md):
//   m   = max_j x_j                                    (exact; NaNs do not count, they propagate below)
//   d_j = R_out(x_j - m)                               site kSub,  index r*C + j
//   e_j = R_out(exp(d_j))                              site kExp,  index r*C + j
//         (softmax_forward_fn with a pwl exp: R_out(R_out(slope_k d_j) + intercept_k), the product at
//         site kPwlMul, the sum at kExp; numerics/pwl.h)
//   s   = sum_j e_j, ascending j, in acc (numerics/mac.h with products e_j * 1, chunk and acc_outer apply)
//                                                      site kSum,  index r*sites(C) + mac site
//   softmax:     y_j = R_out(e_j / s)                  site kResult, index r*C + j
//   log-softmax: l = R_out(log(binary32(s)))           site kLog, index r
//                y_j = R_out(d_j - l)                  site kResult, index r*C + j
// Backward, with y the forward's output and g the grads format (p.out):
//   softmax:     dot = R_g(sum_j R_mul(gy_j y_j)) in acc    site kReduce (a reduction)
//                gx_j = R_g(y_j * R_g(gy_j - dot))          sites kStep1, kStep2
//   log-softmax: S = R_g(sum_j gy_j) in acc                  site kReduce (a reduction)
//                gx_j = R_g(gy_j - R_g(R_g(exp(y_j)) * S))  sites kStep1, kStep2, kStep3
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/row_ops.h"

namespace emu {

// backends/cpu/elementwise_ops.cpp

namespace {

using namespace cpu_rows;

// sum_j v_j in the sum policy's acc as mac_reduce with b = 1 (zero terms skipped).
double row_sum(const MacRounding& sum, bool native, const float* v, const float* ones, int64_t C,
               const RowDraws& draws) {
  if (native) {
    float s = 0.0f;
    for (int64_t j = 0; j < C; ++j)
      if (v[j] != 0.0f) s = fp32_op::add(s, v[j]);
    return s;
  }
  return sum.reduce(v, ones, C, draws);
}

template <class A>
void forward_rows(A a, const MacPolicy& p, bool log, bool native, const FunctionApprox& exp, const float* x,
                  float* y, int64_t C, DrawKey key, int64_t r0, int64_t r1) {
  using namespace softmax_site;
  const MacRounding sp(plain_sum_policy(p));
  const std::vector<float> ones(static_cast<size_t>(C), 1.0f);
  std::vector<float> e(static_cast<size_t>(C));
  A row_arith = a;  // row-level roundings (the log) draw at index r
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < C; ++j) m = xr[j] > m ? xr[j] : m;
    for (int64_t j = 0; j < C; ++j) {
      a.at(static_cast<uint64_t>(r * C + j));
      const float d = a.sub(xr[j], m, kSub);
      e[j] = exp.pwl() ? pwl_value(exp, a, d, kExp, kPwlMul) : a.round(fn_exp(d), kExp);
      yr[j] = d;
    }
    const double s = row_sum(sp, native, e.data(), ones.data(), C, row_draws(key, kSum, r, C, p.chunk));
    if (log) {
      row_arith.at(static_cast<uint64_t>(r));
      const float l = row_arith.round(fn_log(static_cast<float>(s)), kLog);
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        yr[j] = a.sub(yr[j], l, kResult);
      }
    } else {
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        yr[j] = a.div_wide(e[j], s, kResult);
      }
    }
  }
}

template <class A>
void backward_rows(A a, const MacPolicy& p, bool log, const float* y, const float* gy, float* gx, int64_t C,
                   DrawKey key, int64_t r0, int64_t r1) {
  using namespace softmax_site;
  MacPolicy sum_policy = p;  // log-softmax: the plain sum of gy, rounded to g
  sum_policy.mul_exact = true;
  const MacRounding sp(sum_policy), dp(p);
  const bool fast_dot = native_dot(p);
  const bool fast_sum = native_sum(p) && is_plain_fp32(p.out);
  const std::vector<float> ones(static_cast<size_t>(C), 1.0f);
  for (int64_t r = r0; r < r1; ++r) {
    const float* yr = y + r * C;
    const float* gr = gy + r * C;
    float* out = gx + r * C;
    const RowDraws draws = row_draws(key, kReduce, r, C, p.chunk);
    if (log) {
      const float S = static_cast<float>(row_sum(sp, fast_sum, gr, ones.data(), C, draws));
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        const float prob = a.round(fn_exp(yr[j]), kStep1);
        out[j] = a.sub(gr[j], a.mul(prob, S, kStep2), kStep3);
      }
    } else {
      float dot;
      if (fast_dot) {
        float acc = 0.0f;
        for (int64_t j = 0; j < C; ++j)
          if (gr[j] != 0.0f && yr[j] != 0.0f) acc = fp32_op::add(acc, fp32_op::mul(gr[j], yr[j]));
        dot = acc;
      } else {
        dot = static_cast<float>(dp.reduce(gr, yr, C, draws));
      }
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        out[j] = a.mul(yr[j], a.sub(gr[j], dot, kStep1), kStep2);
      }
    }
  }
}

void check_rows(const char* op, const Tensor& a, const Tensor& b) {
  if (a.ndim() != 2 || a.shape() != b.shape())
    throw std::invalid_argument(
        fmt::format("{}: expected two (rows, C) tensors, got {} and {}", op, shape_string(a.shape()),
                    shape_string(b.shape())));
}

}  // namespace

// x: (rows, C) -> y: (rows, C)
void CpuBackend::softmax_forward(const MacPolicy& p, bool log, const Tensor& x, Tensor& y, DrawKey key) {
  softmax_forward_fn(p, log, FunctionApprox{}, x, y, key);
}

// x: (rows, C) -> y: (rows, C), exp exact or pwl
void CpuBackend::softmax_forward_fn(const MacPolicy& p, bool log, const FunctionApprox& exp, const Tensor& x,
                                    Tensor& y, DrawKey key) {
  check_rows("softmax_forward", x, y);
  if (!y.is_contiguous()) throw std::invalid_argument("softmax_forward: the output must be contiguous");
  Tensor xc = x.contiguous();
  const float* xp = xc.data();
  float* yp = y.data();
  const int64_t rows = x.dim(0), C = x.dim(1);
  const bool native = native_sum(p);
  const bool fast = native && is_plain_fp32(p.out);
  const ElementArith arith(p.out, key.seed, key.stream);
  parallel_for(rows, threads_, row_grain(C), [&](int64_t r0, int64_t r1) {
    if (fast) forward_rows(Fp32Arith{}, p, log, true, exp, xp, yp, C, key, r0, r1);
    else forward_rows(arith, p, log, native, exp, xp, yp, C, key, r0, r1);
  });
}

// y, gy: (rows, C) -> gx: (rows, C)
void CpuBackend::softmax_backward(const MacPolicy& p, bool log, const Tensor& y, const Tensor& gy, Tensor& gx,
                                  DrawKey key) {
  check_rows("softmax_backward", y, gy);
  check_rows("softmax_backward", y, gx);
  if (!gx.is_contiguous()) throw std::invalid_argument("softmax_backward: the output must be contiguous");
  Tensor yc = y.contiguous(), gc = gy.contiguous();
  const float *yp = yc.data(), *gp = gc.data();
  float* out = gx.data();
  const int64_t rows = y.dim(0), C = y.dim(1);
  const ElementArith arith(p.out, key.seed, key.stream);
  const bool plain = is_plain_fp32(p.out);
  parallel_for(rows, threads_, row_grain(C), [&](int64_t r0, int64_t r1) {
    if (plain) backward_rows(Fp32Arith{}, p, log, yp, gp, out, C, key, r0, r1);
    else backward_rows(arith, p, log, yp, gp, out, C, key, r0, r1);
  });
}

}  // namespace emu
