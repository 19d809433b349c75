// Optimizer updates on the CPU: the per-element steps of numerics/update_arith.h
// (each arithmetic step one correctly rounded operation in the update format),
// in chunks of elements over the thread pool (each element is independent). In
// plain fp32 the loops call the steps with Fp32UpdateArith, so that the format
// is not tested again for every operation.
#include "backends/cpu/cpu_backend.h"
#include "core/optim_checks.h"
#include "core/tensor.h"
#include "numerics/update_arith.h"

namespace emu {

// p, g, buf: same shape; sgd_step per element.
void CpuBackend::sgd_update(const SgdUpdate& o, Tensor& param, const Tensor& grad, Tensor& buf) {
  check_sgd_update(o.momentum != 0, param, grad, buf);
  const UpdateArith u(o.update_format);
  const SgdStep s = sgd_constants(o);
  float* p = param.data();
  const float* g = grad.data();
  float* b = o.momentum != 0 ? buf.data() : nullptr;
  parallel_for(param.numel(), threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
    if (u.native)
      for (int64_t i = lo; i < hi; ++i) sgd_step(Fp32UpdateArith{}, s, p[i], g[i], b ? b + i : nullptr);
    else
      for (int64_t i = lo; i < hi; ++i) sgd_step(u, s, p[i], g[i], b ? b + i : nullptr);
  });
}

// p, g, m, v: same shape; adam_step per element.
void CpuBackend::adam_update(const AdamUpdate& o, Tensor& param, const Tensor& grad, Tensor& m, Tensor& v) {
  check_adam_update(param, grad, m, v);
  const UpdateArith u(o.update_format);
  const AdamStep s = adam_constants(u, o);
  float* p = param.data();
  const float* g = grad.data();
  float* mp = m.data();
  float* vp = v.data();
  parallel_for(param.numel(), threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
    if (u.native)
      for (int64_t i = lo; i < hi; ++i) adam_step(Fp32UpdateArith{}, s, p[i], g[i], mp[i], vp[i]);
    else
      for (int64_t i = lo; i < hi; ++i) adam_step(u, s, p[i], g[i], mp[i], vp[i]);
  });
}

// x: (any shape, contiguous) *= factor, each product rounded to f.
void CpuBackend::scale(const Format& f, Tensor& x, float factor) {
  check_scale(x);
  const UpdateArith u(f);
  float* p = x.data();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = u.mul(p[i], factor);
}

}  // namespace emu
