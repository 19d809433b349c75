// The optimizer updates' arithmetic, host+device (core/backend_ops_optim.h): each
// step one correctly rounded operation in the update format (fp32 by default),
// in the order written here. The CPU loop (backends/cpu/optim_ops.cpp) and the
// CUDA kernels (backends/cuda/ops/optim.cu) call sgd_step / adam_step per
// element, so the update formulas have one definition.
#pragma once

#include <cstdint>

#include "numerics/format.h"
#include "numerics/fp32_ops.h"
#include "numerics/hd.h"
#include "numerics/round.h"

namespace emu {

// Correctly rounded + - * / sqrt in format f (no draws: under :sr every step
// takes the draw 0, which truncates toward zero). For plain fp32
// the native binary32 operations are these roundings (IEEE 754, sqrt included),
// so they take the fast path; tests check the two agree.
struct UpdateArith {
  Format f;
  bool native;
  EMU_HD explicit UpdateArith(const Format& fmt) : f(fmt), native(is_plain_fp32(fmt)) {}
  EMU_HD float add(float a, float b) const {
    return native ? fp32::add(a, b) : static_cast<float>(format_add(f, a, b));
  }
  EMU_HD float sub(float a, float b) const {
    return native ? fp32::sub(a, b) : static_cast<float>(format_sub(f, a, b));
  }
  EMU_HD float mul(float a, float b) const {
    return native ? fp32::mul(a, b) : static_cast<float>(format_mul(f, a, b));
  }
  EMU_HD float div(float a, float b) const {
    return native ? fp32::div(a, b) : static_cast<float>(format_div(f, a, b));
  }
  EMU_HD float sqrt(float a) const { return native ? fp32::sqrt(a) : static_cast<float>(format_sqrt(f, a)); }
  EMU_HD float read(float a) const { return native ? a : quantize(f, a); }
};

// UpdateArith's plain-fp32 branch alone, for loops that take that branch once
// (the CPU's): the same binary32 operations.
struct Fp32UpdateArith {
  EMU_HD float add(float a, float b) const { return fp32::add(a, b); }
  EMU_HD float sub(float a, float b) const { return fp32::sub(a, b); }
  EMU_HD float mul(float a, float b) const { return fp32::mul(a, b); }
  EMU_HD float div(float a, float b) const { return fp32::div(a, b); }
  EMU_HD float sqrt(float a) const { return fp32::sqrt(a); }
  EMU_HD float read(float a) const { return a; }
};

// The constants of one SGD call (SgdUpdate of core/optim_types.h), computed once on the host.
struct SgdStep {
  float lr, momentum, weight_decay;
  float one_minus_dampening;  // 1 - dampening in binary32
  bool nesterov, first_step;
};

// `o`: an SgdUpdate (any type with its fields).
template <class O>
SgdStep sgd_constants(const O& o) {
  return SgdStep{o.lr, o.momentum, o.weight_decay, 1.0f - o.dampening, o.nesterov, o.first_step};
}

// One element of PyTorch's SGD; buf is null when momentum is 0:
//   g' = g + wd*p;  buf = first ? g' : momentum*buf + (1-dampening)*g';
//   d = nesterov ? g' + momentum*buf : buf (momentum 0: d = g');  p = p - lr*d
// U: UpdateArith or Fp32UpdateArith.
template <class U>
EMU_HD void sgd_step(const U& u, const SgdStep& s, float& p, float g, float* buf) {
  float gi = u.read(g);
  if (s.weight_decay != 0) gi = u.add(gi, u.mul(s.weight_decay, p));
  float d = gi;
  if (buf) {
    *buf = s.first_step ? gi : u.add(u.mul(s.momentum, *buf), u.mul(s.one_minus_dampening, gi));
    d = s.nesterov ? u.add(gi, u.mul(s.momentum, *buf)) : *buf;
  }
  p = u.sub(p, u.mul(s.lr, d));
}

// The constants of one Adam(W) call (AdamUpdate of core/optim_types.h), computed once on the host.
struct AdamStep {
  float lr, beta1, beta2, eps, weight_decay;
  float one_minus_beta1, one_minus_beta2;  // in binary32
  float lr_wd;                             // R(lr * wd) in the update format (AdamW's decay factor)
  float bias_correction1, bias_correction2;
  bool decoupled;
};

// `o`: an AdamUpdate (any type with its fields); u: its update format's arithmetic.
template <class O>
AdamStep adam_constants(const UpdateArith& u, const O& o) {
  return AdamStep{o.lr,
                  o.beta1,
                  o.beta2,
                  o.eps,
                  o.weight_decay,
                  1.0f - o.beta1,
                  1.0f - o.beta2,
                  u.mul(o.lr, o.weight_decay),
                  o.bias_correction1,
                  o.bias_correction2,
                  o.decoupled};
}

// One element of Adam(W):
//   AdamW: p = p - R(lr*wd)*p;  Adam: g = g + wd*p
//   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g
//   p = p - lr * (m / bc1) / (sqrt(v / bc2) + eps)
// U: UpdateArith or Fp32UpdateArith.
template <class U>
EMU_HD void adam_step(const U& u, const AdamStep& s, float& p, float g, float& m, float& v) {
  float gi = u.read(g);
  if (s.weight_decay != 0) {
    if (s.decoupled)
      p = u.sub(p, u.mul(s.lr_wd, p));
    else
      gi = u.add(gi, u.mul(s.weight_decay, p));
  }
  m = u.add(u.mul(s.beta1, m), u.mul(s.one_minus_beta1, gi));
  v = u.add(u.mul(s.beta2, v), u.mul(s.one_minus_beta2, u.mul(gi, gi)));
  const float mhat = u.div(m, s.bias_correction1);
  const float vhat = u.div(v, s.bias_correction2);
  p = u.sub(p, u.div(u.mul(s.lr, mhat), u.add(u.sqrt(vhat), s.eps)));
}

}  // namespace emu
