// Softmax and log-softmax over the last dimension on the device
// (core/backend_ops_elementwise.h), with the formulas of
// numerics/softmax_steps.h and the row reductions of numerics/row_reduce.h,
// the CPU's definitions (backends/cpu/softmax_ops.cpp).
//
// A row's reductions (its max, its sum, the backward's dot product) run on one
// thread each, term by term in ascending order: that order is the reduction's
// definition (numerics/mac.h), so it is not split across threads. The
// per-element steps between them run one thread per element. Every rounding
// draws at the CPU's index (element r*C + j, the log at row r, a reduction at
// r * mac_site_count(C, chunk) + its site), so the bits are the CPU's.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/device_lut.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/scratch.h"
#include "core/elementwise_checks.h"
#include "numerics/element_arith.h"
#include "numerics/row_reduce.h"
#include "numerics/softmax_steps.h"

namespace emu::EMU_CUDA_NS {
namespace {

// m[r] = max_j x[r, j], one thread per row.
__global__ void row_max_kernel(const float* x, float* m, int64_t rows, int64_t C) {
  EMU_GRID_STRIDE_LOOP(r, rows) { m[r] = softmax_row_max(x + r * C, C); }
}

// d = R_out(x - m) into y (kept for log-softmax), e = R_out(exp(d)) into e; per element.
template <class A>
__global__ void shifted_exp_kernel(A arith, FunctionApprox exp, const float* x, const float* m, float* y,
                                   float* e, int64_t n, int64_t C) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    float d;
    e[i] = softmax_shifted_exp(a, exp, x[i], m[i / C], &d);
    y[i] = d;
  }
}

// Row r's sum s = sum_j e[r, j] (site kSum), then stat[r] = s (softmax) or
// l = R_out(log(s)) (log-softmax, the row's rounding at index r); one thread per row.
template <class A>
__global__ void row_sum_kernel(A arith, MacRounding sum, bool native, bool log, const float* e,
                               const float* ones, double* stat, int64_t rows, int64_t C, int chunk,
                               DrawKey key) {
  EMU_GRID_STRIDE_LOOP(r, rows) {
    const double s =
        row_sum(sum, native, e + r * C, ones, C, row_draws(key, softmax_site::kSum, r, C, chunk));
    if (log) {
      A a = arith;
      a.at(static_cast<uint64_t>(r));
      stat[r] = log_softmax_log(a, s);
    } else {
      stat[r] = s;
    }
  }
}

// y = R_out(d - l) (log-softmax, d in y) or R_out(e / s) (softmax); per element.
template <class A>
__global__ void softmax_result_kernel(A arith, bool log, const float* e, const double* stat, float* y,
                                      int64_t n, int64_t C) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    const double st = stat[i / C];
    y[i] = log ? log_softmax_value(a, y[i], static_cast<float>(st)) : softmax_value(a, e[i], st);
  }
}

// Backward, row r's reduction (site kReduce): S = sum_j gy[r, j] (log-softmax,
// in format g) or dot = sum_j gy[r, j] y[r, j] (softmax); one thread per row.
__global__ void backward_reduce_kernel(MacRounding sum, bool fast_sum, MacRounding dot, bool fast_dot,
                                       bool log, const float* y, const float* gy, const float* ones,
                                       float* stat, int64_t rows, int64_t C, int chunk, DrawKey key) {
  EMU_GRID_STRIDE_LOOP(r, rows) {
    const RowDraws draws = row_draws(key, softmax_site::kReduce, r, C, chunk);
    const float* gr = gy + r * C;
    stat[r] = static_cast<float>(log ? row_sum(sum, fast_sum, gr, ones, C, draws)
                                     : row_dot(dot, fast_dot, gr, y + r * C, C, draws));
  }
}

// gx from y, gy and the row's S or dot; per element.
template <class A>
__global__ void softmax_grad_kernel(A arith, bool log, const float* y, const float* gy, const float* stat,
                                    float* gx, int64_t n, int64_t C) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    const float st = stat[i / C];
    gx[i] = log ? log_softmax_grad(a, y[i], gy[i], st) : softmax_grad(a, y[i], gy[i], st);
  }
}

// The forward's four launches under arithmetic A (Fp32Arith or ElementArith).
template <class A>
void forward(A a, const MacPolicy& p, bool log, bool native, const FunctionApprox& exp, const float* x,
             float* y, int64_t rows, int64_t C, DrawKey key) {
  const int64_t n = rows * C;
  const Tensor m = Tensor::zeros({rows}, Device::Cuda);
  const Tensor e = Tensor::zeros({rows, C}, Device::Cuda);
  const Tensor ones = Tensor::full({C}, 1.0f, Device::Cuda);
  DeviceArray<double> stat(static_cast<size_t>(rows));
  float* mp = contiguous_data(m, "row maxima");
  float* ep = contiguous_data(e, "exponentials");
  launch_each("row_max_kernel", row_max_kernel, rows, x, mp, rows, C);
  launch_each("shifted_exp_kernel", shifted_exp_kernel<A>, n, a, exp, x, mp, y, ep, n, C);
  launch_each("row_sum_kernel", row_sum_kernel<A>, rows, a, MacRounding(plain_sum_policy(p)), native, log, ep,
              contiguous_data(ones, "ones"), stat.get(), rows, C, p.chunk, key);
  launch_each("softmax_result_kernel", softmax_result_kernel<A>, n, a, log, ep, stat.get(), y, n, C);
}

}  // namespace

// x: (rows, C) -> y: (rows, C)
void CudaBackend::softmax_forward(const MacPolicy& p, bool log, const Tensor& x, Tensor& y, DrawKey key) {
  softmax_forward_fn(p, log, FunctionApprox{}, x, y, key);
}

// x: (rows, C) -> y: (rows, C), exp exact or pwl
void CudaBackend::softmax_forward_fn(const MacPolicy& p, bool log, const FunctionApprox& exp, const Tensor& x,
                                     Tensor& y, DrawKey key) {
  OpScope scope("softmax_forward");
  check_softmax_forward(x, y);
  const Tensor xc = x.contiguous();
  const int64_t rows = x.dim(0), C = x.dim(1);
  if (rows * C == 0) return;  // no element: the row sums and logs would go nowhere
  const float* xp = contiguous_data(xc, "x");
  float* yp = contiguous_data(y, "y");
  const bool native = native_sum(p);
  if (native && is_plain_fp32(p.out))
    forward(Fp32Arith{}, p, log, true, exp, xp, yp, rows, C, key);
  else
    forward(ElementArith(p.out, key.seed, key.stream), p, log, native, exp, xp, yp, rows, C, key);
}

// y, gy: (rows, C) -> gx: (rows, C)
void CudaBackend::softmax_backward(const MacPolicy& p, bool log, const Tensor& y, const Tensor& gy,
                                   Tensor& gx, DrawKey key) {
  OpScope scope("softmax_backward");
  check_softmax_backward(y, gy, gx);
  const Tensor yc = y.contiguous(), gc = gy.contiguous();
  const int64_t rows = y.dim(0), C = y.dim(1), n = rows * C;
  if (n == 0) return;
  const float *yp = contiguous_data(yc, "y"), *gp = contiguous_data(gc, "gy");
  float* out = contiguous_data(gx, "gx");
  MacPolicy sum_policy = p;  // log-softmax: the plain sum of gy, rounded to g
  sum_policy.mul_exact = true;
  const MacPolicy dot_policy = with_device_lut(p);  // softmax: products under p.mul, its table included
  const Tensor ones = Tensor::full({C}, 1.0f, Device::Cuda);
  const Tensor stat = Tensor::zeros({rows}, Device::Cuda);
  float* sp = contiguous_data(stat, "row sums");
  launch_each("backward_reduce_kernel", backward_reduce_kernel, rows, MacRounding(sum_policy),
              native_sum(p) && is_plain_fp32(p.out), MacRounding(dot_policy), native_dot(p), log, yp, gp,
              contiguous_data(ones, "ones"), sp, rows, C, p.chunk, key);
  if (is_plain_fp32(p.out))
    launch_each("softmax_grad_kernel", softmax_grad_kernel<Fp32Arith>, n, Fp32Arith{}, log, yp, gp, sp, out,
                n, C);
  else
    launch_each("softmax_grad_kernel", softmax_grad_kernel<ElementArith>, n,
                ElementArith(p.out, key.seed, key.stream), log, yp, gp, sp, out, n, C);
}

}  // namespace emu::EMU_CUDA_NS
