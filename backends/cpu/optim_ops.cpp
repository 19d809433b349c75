// Optimizer updates on the CPU. Each arithmetic step is one correctly rounded
// operation in the update format (fp32 by default, where the native float
// operations are exactly that), in the order written here.
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "backends/cpu/cpu_backend.h"
#include "layers/layer_io.h"
#include "numerics/round.h"

namespace emu {
namespace {

// Correctly rounded + - * / sqrt in format f. For plain fp32 the native binary32
// operations are these roundings (IEEE 754; sqrt included), so they take the
// fast path; tests check the two agree.
struct UpdateArith {
  Format f;
  bool native;
  explicit UpdateArith(const Format& fmt) : f(fmt), native(is_plain_fp32(fmt)) {}
  float add(float a, float b) const { return native ? a + b : static_cast<float>(format_add(f, a, b)); }
  float sub(float a, float b) const { return native ? a - b : static_cast<float>(format_sub(f, a, b)); }
  float mul(float a, float b) const { return native ? a * b : static_cast<float>(format_mul(f, a, b)); }
  float div(float a, float b) const { return native ? a / b : static_cast<float>(format_div(f, a, b)); }
  float sqrt(float a) const { return native ? std::sqrt(a) : static_cast<float>(format_sqrt(f, a)); }
  float read(float a) const { return native ? a : quantize(f, a); }
};

void check_same(const char* op, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || !a.is_contiguous() || !b.is_contiguous())
    throw std::invalid_argument(fmt::format("{}: tensors of shape {} and {} (both contiguous) expected", op,
                                            shape_string(a.shape()), shape_string(b.shape())));
}

}  // namespace

// p, g, buf: same shape. PyTorch's SGD:
//   g' = g + wd*p;  buf = first ? g' : momentum*buf + (1-dampening)*g';
//   d = nesterov ? g' + momentum*buf : buf (momentum 0: d = g');  p = p - lr*d
void CpuBackend::sgd_update(const SgdUpdate& o, Tensor& param, const Tensor& grad, Tensor& buf) {
  check_same("sgd_update", param, grad);
  if (o.momentum != 0) check_same("sgd_update", param, buf);
  const UpdateArith u(o.update_format);
  float* p = param.data();
  const float* g = grad.data();
  float* b = o.momentum != 0 ? buf.data() : nullptr;
  const int64_t n = param.numel();
  for (int64_t i = 0; i < n; ++i) {
    float gi = u.read(g[i]);
    if (o.weight_decay != 0) gi = u.add(gi, u.mul(o.weight_decay, p[i]));
    float d = gi;
    if (b) {
      b[i] = o.first_step ? gi : u.add(u.mul(o.momentum, b[i]), u.mul(1.0f - o.dampening, gi));
      d = o.nesterov ? u.add(gi, u.mul(o.momentum, b[i])) : b[i];
    }
    p[i] = u.sub(p[i], u.mul(o.lr, d));
  }
}

// p, g, m, v: same shape. Adam(W):
//   AdamW: p = p - lr*wd*p;  Adam: g = g + wd*p
//   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g
//   p = p - lr * (m / bc1) / (sqrt(v / bc2) + eps)
void CpuBackend::adam_update(const AdamUpdate& o, Tensor& param, const Tensor& grad, Tensor& m, Tensor& v) {
  check_same("adam_update", param, grad);
  check_same("adam_update", param, m);
  check_same("adam_update", param, v);
  const UpdateArith u(o.update_format);
  float* p = param.data();
  const float* g = grad.data();
  float* mp = m.data();
  float* vp = v.data();
  const float one_minus_b1 = 1.0f - o.beta1, one_minus_b2 = 1.0f - o.beta2;
  const int64_t n = param.numel();
  for (int64_t i = 0; i < n; ++i) {
    float gi = u.read(g[i]);
    if (o.weight_decay != 0) {
      if (o.decoupled) p[i] = u.sub(p[i], u.mul(u.mul(o.lr, o.weight_decay), p[i]));
      else gi = u.add(gi, u.mul(o.weight_decay, p[i]));
    }
    mp[i] = u.add(u.mul(o.beta1, mp[i]), u.mul(one_minus_b1, gi));
    vp[i] = u.add(u.mul(o.beta2, vp[i]), u.mul(one_minus_b2, u.mul(gi, gi)));
    float mhat = u.div(mp[i], o.bias_correction1);
    float vhat = u.div(vp[i], o.bias_correction2);
    p[i] = u.sub(p[i], u.div(u.mul(o.lr, mhat), u.add(u.sqrt(vhat), o.eps)));
  }
}

// x *= factor, rounded to f.
void CpuBackend::scale(const Format& f, Tensor& x, float factor) {
  if (!x.is_contiguous()) throw std::invalid_argument("scale: contiguous tensor expected");
  const UpdateArith u(f);
  float* p = x.data();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = u.mul(p[i], factor);
}

}  // namespace emu
