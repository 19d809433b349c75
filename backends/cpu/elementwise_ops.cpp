// Activations and the element-wise add on the CPU, threaded over contiguous
// chunks of elements (parallel_for: the CPU thread pool).
//
// Each op has a plain fp32 fast path (Fp32Arith: native binary32 operations,
// vectorisable) and the general path (ElementArith: exact operations rounded
// into the format); both run the same per-element definition from
// core/backend_ops_elementwise.h and give the same bits where both apply.
#include <algorithm>
#include <functional>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/stage_rows.h"
#include "core/elementwise_checks.h"
#include "core/tensor.h"
#include "numerics/activations.h"
#include "numerics/bulk.h"

namespace emu {

namespace {

template <Activation K>
void activation_values(const float* x, float* y, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) y[i] = activation_value(K, x[i]);
}

template <Activation K, class A>
void activation_grads(A a, const float* x, const float* y, const float* gy, float* gx, int64_t lo,
                      int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    a.at(static_cast<uint64_t>(i));
    gx[i] = activation_grad(K, a, x[i], y[i], gy[i]);
  }
}

template <class A>
void grads_for(Activation kind, const A& a, const float* x, const float* y, const float* gy, float* gx,
               int64_t lo, int64_t hi) {
  switch (kind) {
    case Activation::Relu:
      activation_grads<Activation::Relu>(a, x, y, gy, gx, lo, hi);
      break;
    case Activation::Gelu:
      activation_grads<Activation::Gelu>(a, x, y, gy, gx, lo, hi);
      break;
    case Activation::Silu:
      activation_grads<Activation::Silu>(a, x, y, gy, gx, lo, hi);
      break;
    case Activation::Tanh:
      activation_grads<Activation::Tanh>(a, x, y, gy, gx, lo, hi);
      break;
    case Activation::Sigmoid:
      activation_grads<Activation::Sigmoid>(a, x, y, gy, gx, lo, hi);
      break;
  }
}

// A pwl activation: y = pwl_value (numerics/pwl.h), element i at index i.
template <class A>
void pwl_values(A a, const FunctionApprox& fn, const float* x, float* y, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    a.at(static_cast<uint64_t>(i));
    y[i] = pwl_value(fn, a, x[i], 0, kPwlMulSite);
  }
}

// Its backward: the derivative of the approximation (activation_pwl_grad).
template <class A>
void pwl_grads(A a, const FunctionApprox& fn, const float* x, const float* gy, float* gx, int64_t lo,
               int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    a.at(static_cast<uint64_t>(i));
    gx[i] = activation_pwl_grad(fn, a, x[i], gy[i]);
  }
}

template <class A>
void add_values(A a, const float* x, const float* y, float* out, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    a.at(static_cast<uint64_t>(i));
    out[i] = a.add(x[i], y[i], 0);
  }
}

}  // namespace

// x: (n) -> y: (n), y[i] = R_out(f(x[i])): f in binary32, then the chunk rounded
// in bulk (numerics/bulk.h), element i drawing at index i of stream key.stream.
// A pwl function (not relu): pwl_value element by element.
void CpuBackend::activation_forward(Activation kind, const FunctionApprox& fn, const Format& out,
                                    const Tensor& x, Tensor& y, DrawKey key) {
  check_activation_forward(x, y);
  Tensor xc = x.contiguous();
  const float* xp = xc.data();
  float* yp = y.data();
  const bool plain = is_plain_fp32(out);
  if (fn.pwl() && kind != Activation::Relu) {
    const ElementArith arith(out, key.seed, key.stream);
    parallel_for(x.numel(), threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
      if (plain)
        pwl_values(Fp32Arith{}, fn, xp, yp, lo, hi);
      else
        pwl_values(arith, fn, xp, yp, lo, hi);
    });
    return;
  }
  parallel_for(x.numel(), threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
    switch (kind) {
      case Activation::Relu:
        activation_values<Activation::Relu>(xp, yp, lo, hi);
        break;
      case Activation::Gelu:
        activation_values<Activation::Gelu>(xp, yp, lo, hi);
        break;
      case Activation::Silu:
        activation_values<Activation::Silu>(xp, yp, lo, hi);
        break;
      case Activation::Tanh:
        activation_values<Activation::Tanh>(xp, yp, lo, hi);
        break;
      case Activation::Sigmoid:
        activation_values<Activation::Sigmoid>(xp, yp, lo, hi);
        break;
    }
    if (plain) return;
    BulkOptions opt;
    opt.threads = 1;
    opt.seed = key.seed;
    opt.stream = key.stream;
    opt.first_index = static_cast<uint64_t>(lo);
    quantize_array(out, yp + lo, yp + lo, static_cast<size_t>(hi - lo), opt);
  });
}

// x, y, gy: (n) -> gx: (n), activation_grad in format g (pwl: activation_pwl_grad).
void CpuBackend::activation_backward(Activation kind, const FunctionApprox& fn, const Format& g,
                                     const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx,
                                     DrawKey key) {
  check_activation_backward(x, y, gy, gx);
  Tensor xc = x.contiguous(), yc = y.contiguous(), gc = gy.contiguous();
  const float *xp = xc.data(), *yp = yc.data(), *gp = gc.data();
  float* out = gx.data();
  const bool plain = is_plain_fp32(g);
  const ElementArith arith(g, key.seed, key.stream);
  const bool pwl = fn.pwl() && kind != Activation::Relu;
  parallel_for(x.numel(), threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
    if (pwl && plain)
      pwl_grads(Fp32Arith{}, fn, xp, gp, out, lo, hi);
    else if (pwl)
      pwl_grads(arith, fn, xp, gp, out, lo, hi);
    else if (plain)
      grads_for(kind, Fp32Arith{}, xp, yp, gp, out, lo, hi);
    else
      grads_for(kind, arith, xp, yp, gp, out, lo, hi);
  });
}

// a, b: (n) -> y: (n), y[i] = R_f(a[i] + b[i]). Other formats than plain fp32 run StageRows
// (backends/cpu/stage_rows.h: vectors of lanes where the format allows), whose StageRound add is
// ElementArith's (the same rounded_add, element i drawing philox_draw(seed, stream, i)): the residual
// adds of an e6m6 ResNet-18 took 31-32 ms a b32 step element by element.
void CpuBackend::elementwise_add(const Format& f, const Tensor& a, const Tensor& b, Tensor& y, DrawKey key) {
  check_elementwise_add(a, b, y);
  Tensor ac = a.contiguous(), bc = b.contiguous();
  const float *ap = ac.data(), *bp = bc.data();
  float* out = y.data();
  if (is_plain_fp32(f)) {
    parallel_for(a.numel(), threads_, kGrainElements,
                 [&](int64_t lo, int64_t hi) { add_values(Fp32Arith{}, ap, bp, out, lo, hi); });
    return;
  }
  const StageRound round(f, key.seed, key.stream);
  const cpu_rows::StageRows rows(round);
  parallel_for(a.numel(), threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
    rows.add(ap + lo, bp + lo, 0.0f, out + lo, hi - lo, static_cast<uint64_t>(lo));
  });
}

}  // namespace emu
