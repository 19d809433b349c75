// Softmax and log-softmax over the last dimension on the CPU, threaded over rows.
// The formulas, rounding sites and draw indices are numerics/softmax_steps.h's
// (per element) and numerics/row_reduce.h's (the row sums), which the CUDA
// kernels call too; this file only lays the rows out over the thread pool.
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/row_ops.h"
#include "core/elementwise_checks.h"
#include "core/tensor.h"
#include "numerics/functions_lanes.h"
#include "numerics/softmax_steps.h"

namespace emu {

namespace {

using cpu_rows::row_grain;

template <class A>
void forward_rows(A a, const MacPolicy& p, bool log, bool native, const FunctionApprox& exp, const float* x,
                  float* y, int64_t C, DrawKey key, int64_t r0, int64_t r1) {
  const MacRounding sp(plain_sum_policy(p));
  const std::vector<float> ones(static_cast<size_t>(C), 1.0f);
  std::vector<float> e(static_cast<size_t>(C));
  A row_arith = a;  // row-level roundings (the log) draw at index r
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    const float m = softmax_row_max(xr, C);
    if (exp.pwl()) {
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        e[j] = softmax_shifted_exp(a, exp, xr[j], m, &yr[j]);  // y holds d_j until the result
      }
    } else {  // softmax_shifted_exp's steps, fn_exp eight lanes at a time in between
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        yr[j] = softmax_shift(a, xr[j], m);  // y holds d_j until the result
      }
      fn_exp_array(yr, e.data(), C);
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        e[j] = softmax_rounded_exp(a, e[j]);
      }
    }
    const double s =
        row_sum(sp, native, e.data(), ones.data(), C, row_draws(key, softmax_site::kSum, r, C, p.chunk));
    if (log) {
      row_arith.at(static_cast<uint64_t>(r));
      const float l = log_softmax_log(row_arith, s);
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        yr[j] = log_softmax_value(a, yr[j], l);
      }
    } else {
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        yr[j] = softmax_value(a, e[j], s);
      }
    }
  }
}

template <class A>
void backward_rows(A a, const MacPolicy& p, bool log, const float* y, const float* gy, float* gx, int64_t C,
                   DrawKey key, int64_t r0, int64_t r1) {
  MacPolicy sum_policy = p;  // log-softmax: the plain sum of gy, rounded to g
  sum_policy.mul_exact = true;
  const MacRounding sp(sum_policy), dp(p);
  const bool fast_dot = native_dot(p);
  const bool fast_sum = native_sum(p) && is_plain_fp32(p.out);
  const std::vector<float> ones(static_cast<size_t>(C), 1.0f);
  std::vector<float> ex(log ? static_cast<size_t>(C) : 0);  // fn_exp(y_j) of a row
  for (int64_t r = r0; r < r1; ++r) {
    const float* yr = y + r * C;
    const float* gr = gy + r * C;
    float* out = gx + r * C;
    const RowDraws draws = row_draws(key, softmax_site::kReduce, r, C, p.chunk);
    if (log) {
      const float S = static_cast<float>(row_sum(sp, fast_sum, gr, ones.data(), C, draws));
      fn_exp_array(yr, ex.data(), C);  // eight lanes at a time
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        out[j] = log_softmax_grad_of_exp(a, ex[j], gr[j], S);
      }
    } else {
      const float dot = static_cast<float>(row_dot(dp, fast_dot, gr, yr, C, draws));
      for (int64_t j = 0; j < C; ++j) {
        a.at(static_cast<uint64_t>(r * C + j));
        out[j] = softmax_grad(a, yr[j], gr[j], dot);
      }
    }
  }
}

}  // namespace

// x: (rows, C) -> y: (rows, C)
void CpuBackend::softmax_forward(const MacPolicy& p, bool log, const Tensor& x, Tensor& y, DrawKey key) {
  softmax_forward_fn(p, log, FunctionApprox{}, x, y, key);
}

// x: (rows, C) -> y: (rows, C), exp exact or pwl
void CpuBackend::softmax_forward_fn(const MacPolicy& p, bool log, const FunctionApprox& exp, const Tensor& x,
                                    Tensor& y, DrawKey key) {
  check_softmax_forward(x, y);
  Tensor xc = x.contiguous();
  const float* xp = xc.data();
  float* yp = y.data();
  const int64_t rows = x.dim(0), C = x.dim(1);
  const bool native = native_sum(p);
  const bool fast = native && is_plain_fp32(p.out);
  const ElementArith arith(p.out, key.seed, key.stream);
  parallel_for(rows, threads_, row_grain(C), [&](int64_t r0, int64_t r1) {
    if (fast)
      forward_rows(Fp32Arith{}, p, log, true, exp, xp, yp, C, key, r0, r1);
    else
      forward_rows(arith, p, log, native, exp, xp, yp, C, key, r0, r1);
  });
}

// y, gy: (rows, C) -> gx: (rows, C)
void CpuBackend::softmax_backward(const MacPolicy& p, bool log, const Tensor& y, const Tensor& gy, Tensor& gx,
                                  DrawKey key) {
  check_softmax_backward(y, gy, gx);
  Tensor yc = y.contiguous(), gc = gy.contiguous();
  const float *yp = yc.data(), *gp = gc.data();
  float* out = gx.data();
  const int64_t rows = y.dim(0), C = y.dim(1);
  const ElementArith arith(p.out, key.seed, key.stream);
  const bool plain = is_plain_fp32(p.out);
  parallel_for(rows, threads_, row_grain(C), [&](int64_t r0, int64_t r1) {
    if (plain)
      backward_rows(Fp32Arith{}, p, log, yp, gp, out, C, key, r0, r1);
    else
      backward_rows(arith, p, log, yp, gp, out, C, key, r0, r1);
  });
}

}  // namespace emu
