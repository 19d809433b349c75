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

namespace {

// Plain fp32 sgd_step over [lo, hi) with its switches fixed for the loop: the
// step's branches (weight decay, momentum, first step, Nesterov) fold away and
// the loop vectorises, where the per-element branches and three possibly
// aliased arrays had kept it scalar (ResNet-18 b32: 35-50 ms a step).
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void sgd_rows_fp32(const SgdStep& s, float* __restrict p, const float* __restrict g, float* __restrict b,
                   int64_t lo, int64_t hi) {
  SgdStep fixed = s;
  if constexpr (!kDecay) fixed.weight_decay = 0.0f;
  fixed.first_step = kFirst;
  fixed.nesterov = kNesterov;
  for (int64_t i = lo; i < hi; ++i)
    sgd_step(Fp32UpdateArith{}, fixed, p[i], g[i], kMomentum ? b + i : nullptr);
}

template <bool... kFixed>
void sgd_rows_fp32_dispatch(const SgdStep& s, float* p, const float* g, float* b, int64_t lo, int64_t hi) {
  if constexpr (sizeof...(kFixed) == 4) {
    sgd_rows_fp32<kFixed...>(s, p, g, b, lo, hi);
  } else {
    const bool next = sizeof...(kFixed) == 0   ? s.weight_decay != 0
                      : sizeof...(kFixed) == 1 ? b != nullptr
                      : sizeof...(kFixed) == 2 ? s.first_step
                                               : s.nesterov;
    if (next)
      sgd_rows_fp32_dispatch<kFixed..., true>(s, p, g, b, lo, hi);
    else
      sgd_rows_fp32_dispatch<kFixed..., false>(s, p, g, b, lo, hi);
  }
}

}  // namespace

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
      sgd_rows_fp32_dispatch<>(s, p, g, b, lo, hi);
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
