// Optimizer updates on the device (core/backend_ops_optim.h): one thread per
// element running the per-element steps of numerics/update_arith.h, which the
// CPU loop runs too (backends/cpu/optim_ops.cpp). Elements are independent and
// the steps draw nothing, so the bits are the CPU's whatever the launch shape.
// The call's constants (1 - beta1, R(lr * wd), ...) are computed once on the
// host, as the CPU computes them.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/launch_each.h"
#include "core/optim_checks.h"
#include "numerics/update_arith.h"

namespace emu::EMU_CUDA_NS {
namespace {

// buf: null without momentum.
__global__ void sgd_kernel(UpdateArith u, SgdStep s, float* p, const float* g, float* buf, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) { sgd_step(u, s, p[i], g[i], buf ? buf + i : nullptr); }
}

__global__ void adam_kernel(UpdateArith u, AdamStep s, float* p, const float* g, float* m, float* v,
                            int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) { adam_step(u, s, p[i], g[i], m[i], v[i]); }
}

// x[i] = R_f(x[i] * factor).
__global__ void scale_kernel(UpdateArith u, float factor, float* x, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) { x[i] = u.mul(x[i], factor); }
}

}  // namespace

// param, grad, buf: same shape, contiguous; buf read and written only with momentum.
void CudaBackend::sgd_update(const SgdUpdate& o, Tensor& param, const Tensor& grad, Tensor& buf) {
  OpScope scope("sgd_update");
  check_sgd_update(o.momentum != 0, param, grad, buf);
  const int64_t n = param.numel();
  if (n == 0) return;
  float* b = o.momentum != 0 ? contiguous_data(buf, "momentum_buf") : nullptr;
  launch_each("sgd_kernel", sgd_kernel, n, UpdateArith(o.update_format), sgd_constants(o),
              contiguous_data(param, "param"), static_cast<const float*>(contiguous_data(grad, "grad")), b,
              n);
}

// param, grad, exp_avg, exp_avg_sq: same shape, contiguous.
void CudaBackend::adam_update(const AdamUpdate& o, Tensor& param, const Tensor& grad, Tensor& m, Tensor& v) {
  OpScope scope("adam_update");
  check_adam_update(param, grad, m, v);
  const int64_t n = param.numel();
  if (n == 0) return;
  const UpdateArith u(o.update_format);
  launch_each("adam_kernel", adam_kernel, n, u, adam_constants(u, o), contiguous_data(param, "param"),
              static_cast<const float*>(contiguous_data(grad, "grad")), contiguous_data(m, "exp_avg"),
              contiguous_data(v, "exp_avg_sq"), n);
}

// x: (any shape, contiguous) *= factor, each product rounded to f.
void CudaBackend::scale(const Format& f, Tensor& x, float factor) {
  OpScope scope("scale");
  check_scale(x);
  const int64_t n = x.numel();
  if (n == 0) return;
  launch_each("scale_kernel", scale_kernel, n, UpdateArith(f), factor, contiguous_data(x, "x"), n);
}

}  // namespace emu::EMU_CUDA_NS
