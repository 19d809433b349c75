// The per-step arithmetic of the recurrent ops, host+device (docs/layers_recurrent.md):
// the gate functions (exact or pwl), the rounding sites of one step, and the LSTM
// and GRU cell maths forward and backward through an arithmetic A (ElementArith
// or Fp32Arith of numerics/element_arith.h). One definition that the CPU
// reference (backends/cpu/recurrent_ops.cpp) and the CUDA kernels both call.
#pragma once

#include <cstdint>

#include "numerics/activations.h"
#include "numerics/element_arith.h"
#include "numerics/functions.h"
#include "numerics/pwl.h"

namespace emu {

// The gate functions of a recurrent op: the policy's sigmoid and tanh (exact or
// pwl). A POD, passed as it is to a CUDA kernel.
struct GateFunctions {
  FunctionApprox sigmoid, tanh;
  EMU_HD bool any_pwl() const { return sigmoid.pwl() || tanh.pwl(); }
};

// A gate value: R(f(x)) at `site` (exact) or pwl_value (sum at `site`, product at `mul_site`).
template <class A>
EMU_HD float gate_sigmoid(const FunctionApprox& fa, const A& a, float x, uint32_t site, uint32_t mul_site) {
  return fa.pwl() ? pwl_value(fa, a, x, site, mul_site) : a.round(fn_sigmoid(x), site);
}
template <class A>
EMU_HD float gate_tanh(const FunctionApprox& fa, const A& a, float x, uint32_t site, uint32_t mul_site) {
  return fa.pwl() ? pwl_value(fa, a, x, site, mul_site) : a.round(fn_tanh(x), site);
}

// Streams of the backward's whole-sequence reductions: key.stream + these.
namespace recurrent_site {
constexpr uint32_t kGradX = 0;     // dx
constexpr uint32_t kGradWih = 1;   // dw_ih
constexpr uint32_t kGradWhh = 2;   // dw_hh
constexpr uint32_t kGradBias = 3;  // dbias
}  // namespace recurrent_site

// Rounding sites (stream offsets from the step's key) of the LSTM ops.
namespace lstm_site {
// Forward.
constexpr uint32_t kReadH = 0;  // R_act(h_{t-1}) into xh
constexpr uint32_t kGates = 1;  // the gate reductions (N x 4H outputs, K = I+H)
constexpr uint32_t kI = 2;      // i = R(sigmoid(a_i))
constexpr uint32_t kF = 3;      // f = R(sigmoid(a_f))
constexpr uint32_t kG = 4;      // g = R(tanh(a_g))
constexpr uint32_t kO = 5;      // o = R(sigmoid(a_o))
constexpr uint32_t kFC = 6;     // R(f * c_{t-1})
constexpr uint32_t kIG = 7;     // R(i * g)
constexpr uint32_t kC = 8;      // c_t = R(fc + ig)
constexpr uint32_t kTanhC = 9;  // tc = R(tanh(c_t))
constexpr uint32_t kH = 10;     // h_t = R(o * tc)
constexpr uint32_t kPwlI = 11;  // 11..15: pwl products R(slope * x) of i, f, g, o, tanh(c_t)
constexpr uint32_t kPwlF = 12;
constexpr uint32_t kPwlG = 13;
constexpr uint32_t kPwlO = 14;
constexpr uint32_t kPwlTanhC = 15;
// Backward.
constexpr uint32_t kDh = 0;        // dh = R(gy + dh_next)
constexpr uint32_t kDtc = 1;       // dtc = R(dh * o)
constexpr uint32_t kDo = 2;        // do = R(dh * tc)
constexpr uint32_t kTanhGrad = 3;  // 3, 4, 5: R(dtc * R(1 - R(tc * tc)))
constexpr uint32_t kDc = 6;        // dc = R(dc_next + that)
constexpr uint32_t kDi = 7;        // di = R(dc * g)
constexpr uint32_t kDg = 8;        // dg = R(dc * i)
constexpr uint32_t kDf = 9;        // df = R(dc * c_{t-1})
constexpr uint32_t kDcPrev = 10;   // dc_{t-1} = R(dc * f)
constexpr uint32_t kGradI = 11;    // 11..13: da_i = R(di * R(i * R(1 - i)))
constexpr uint32_t kGradF = 14;    // 14..16: da_f
constexpr uint32_t kGradG = 17;    // 17..19: da_g = R(dg * R(1 - R(g * g)))
constexpr uint32_t kGradO = 20;    // 20..22: da_o
constexpr uint32_t kGemmH = 23;    // dh_{t-1} = R(sum over the 4H gate units of da * W_hh)
}  // namespace lstm_site

namespace gru_site {
// Forward.
constexpr uint32_t kReadH = 0;    // R_act(h_{t-1}) into xh
constexpr uint32_t kGatesRZ = 1;  // r, z pre-activations (N x 2H outputs, K = I+H)
constexpr uint32_t kGatesNX = 2;  // a_nx (N x H outputs, K = I)
constexpr uint32_t kGatesNH = 3;  // a_nh (N x H outputs, K = H)
constexpr uint32_t kR = 4;        // r = R(sigmoid(a_r))
constexpr uint32_t kZ = 5;        // z = R(sigmoid(a_z))
constexpr uint32_t kU = 6;        // u = R(r * a_nh)
constexpr uint32_t kAN = 7;       // a_n = R(a_nx + u)
constexpr uint32_t kN = 8;        // n = R(tanh(a_n))
constexpr uint32_t kD = 9;        // d = R(h_{t-1} - n)
constexpr uint32_t kE = 10;       // e = R(z * d)
constexpr uint32_t kH = 11;       // h_t = R(n + e)
constexpr uint32_t kPwlR = 12;    // 12..14: pwl products R(slope * x) of r, z, n
constexpr uint32_t kPwlZ = 13;
constexpr uint32_t kPwlN = 14;
// Backward.
constexpr uint32_t kDh = 0;       // dh = R(gy + dh_next)
constexpr uint32_t kDz = 1;       // dz = R(dh * d)
constexpr uint32_t kDd = 2;       // dd = R(dh * z)
constexpr uint32_t kDn = 3;       // dn = R(dh - dd)
constexpr uint32_t kGradN = 4;    // 4..6: da_n = R(dn * R(1 - R(n * n)))
constexpr uint32_t kDanh = 7;     // da_nh = R(da_n * r)
constexpr uint32_t kDr = 8;       // dr = R(da_n * a_nh)
constexpr uint32_t kGradR = 9;    // 9..11: da_r = R(dr * R(r * R(1 - r)))
constexpr uint32_t kGradZ = 12;   // 12..14: da_z = R(dz * R(z * R(1 - z)))
constexpr uint32_t kGemmH = 15;   // g = R(sum over the units of (r, z, n) of [da_r, da_z, da_nh] * W_hh)
constexpr uint32_t kDhPrev = 16;  // dh_{t-1} = R(g + dd)
}  // namespace gru_site

// Element-wise arithmetic `a` (ElementArith or Fp32Arith) with its sites moved
// by `base`, so that activation_grad's sites 0..2 land where a cell wants them.
template <class A>
struct ShiftedSites {
  const A& a;
  uint32_t base;
  EMU_HD float round(float x, uint32_t s) const { return a.round(x, base + s); }
  EMU_HD float add(float x, float y, uint32_t s) const { return a.add(x, y, base + s); }
  EMU_HD float sub(float x, float y, uint32_t s) const { return a.sub(x, y, base + s); }
  EMU_HD float mul(float x, float y, uint32_t s) const { return a.mul(x, y, base + s); }
};

template <class A>
EMU_HD ShiftedSites<A> shifted(const A& a, uint32_t base) {
  return ShiftedSites<A>{a, base};
}

// One LSTM unit of one valid step, every result rounded by `a` (the out format)
// in this order. pre: a_i, a_f, a_g, a_o; c: c_{t-1}. Writes saved[k*s], k = 0..5:
// i, f, g, o, tanh(c_t), c_{t-1}, and, when `slopes` is not null, slopes[k*s],
// k = 0..4, the pwl slopes of i, f, g, o, tanh(c_t); returns h_t and sets *c_next = c_t.
template <class A>
EMU_HD float lstm_cell_forward(const A& a, const GateFunctions& fns, float ai, float af, float ag, float ao,
                               float c, float* c_next, float* saved, int64_t s, float* slopes) {
  using namespace lstm_site;
  const FunctionApprox &sg = fns.sigmoid, &th = fns.tanh;
  const float i = gate_sigmoid(sg, a, ai, kI, kPwlI), f = gate_sigmoid(sg, a, af, kF, kPwlF);
  const float g = gate_tanh(th, a, ag, kG, kPwlG), o = gate_sigmoid(sg, a, ao, kO, kPwlO);
  const float fc = a.mul(f, c, kFC), ig = a.mul(i, g, kIG);
  const float c2 = a.add(fc, ig, kC);
  const float tc = gate_tanh(th, a, c2, kTanhC, kPwlTanhC);
  saved[0] = i, saved[s] = f, saved[2 * s] = g, saved[3 * s] = o, saved[4 * s] = tc, saved[5 * s] = c;
  if (slopes && sg.pwl())
    slopes[0] = pwl_slope(sg, ai), slopes[s] = pwl_slope(sg, af), slopes[3 * s] = pwl_slope(sg, ao);
  if (slopes && th.pwl()) slopes[2 * s] = pwl_slope(th, ag), slopes[4 * s] = pwl_slope(th, c2);
  *c_next = c2;
  return a.mul(o, tc, kH);
}

// The gradient through a gate: the derivative of the approximation R(d * slope)
// at `site` when `fa` is pwl, else activation_grad's exact formula from the
// gate's value y (sites site .. site + 2).
template <class A>
EMU_HD float gate_grad(Activation kind, const FunctionApprox& fa, const A& a, uint32_t site, float y,
                       float slope, float d) {
  return fa.pwl() ? a.mul(d, slope, site) : activation_grad(kind, shifted(a, site), 0.0f, y, d);
}

// Its gradient, every result rounded by `a` (the grads format). dh: the total
// gradient of h_t (after kDh), dc_next: that of c_t from step t+1; saved (and
// slopes, null when both functions are exact) as the forward wrote them (stride
// s). Writes dgate[k*s], k = 0..3: da_i, da_f, da_g, da_o; returns dc_{t-1}.
template <class A>
EMU_HD float lstm_cell_backward(const A& a, const GateFunctions& fns, const float* saved, const float* slopes,
                                int64_t s, float dh, float dc_next, float* dgate) {
  using namespace lstm_site;
  const FunctionApprox &sg = fns.sigmoid, &th = fns.tanh;
  const float i = saved[0], f = saved[s], g = saved[2 * s], o = saved[3 * s], tc = saved[4 * s];
  const float c_prev = saved[5 * s];
  float sl[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  if (slopes)
    for (int k = 0; k < 5; ++k) sl[k] = slopes[k * s];
  const float dtc = a.mul(dh, o, kDtc);
  const float d_o = a.mul(dh, tc, kDo);
  const float dc = a.add(dc_next, gate_grad(Activation::Tanh, th, a, kTanhGrad, tc, sl[4], dtc), kDc);
  const float di = a.mul(dc, g, kDi), dg = a.mul(dc, i, kDg), df = a.mul(dc, c_prev, kDf);
  const float dc_prev = a.mul(dc, f, kDcPrev);
  dgate[0] = gate_grad(Activation::Sigmoid, sg, a, kGradI, i, sl[0], di);
  dgate[s] = gate_grad(Activation::Sigmoid, sg, a, kGradF, f, sl[1], df);
  dgate[2 * s] = gate_grad(Activation::Tanh, th, a, kGradG, g, sl[2], dg);
  dgate[3 * s] = gate_grad(Activation::Sigmoid, sg, a, kGradO, o, sl[3], d_o);
  return dc_prev;
}

// One GRU unit of one valid step (PyTorch's formulas; h_t = n + z (h - n) is
// (1 - z) n + z h), every result rounded by `a` (the out format). pre: a_r, a_z,
// a_nx, a_nh; h: h_{t-1} (the state, not its read copy). Writes saved[k*s],
// k = 0..4: r, z, n, a_nh, d, and when `slopes` is not null slopes[k*s], k = 0..2,
// the pwl slopes of r, z, n; returns h_t.
template <class A>
EMU_HD float gru_cell_forward(const A& a, const GateFunctions& fns, float ar, float az, float anx, float anh,
                              float h, float* saved, int64_t s, float* slopes) {
  using namespace gru_site;
  const FunctionApprox &sg = fns.sigmoid, &th = fns.tanh;
  const float r = gate_sigmoid(sg, a, ar, kR, kPwlR), z = gate_sigmoid(sg, a, az, kZ, kPwlZ);
  const float u = a.mul(r, anh, kU);
  const float an = a.add(anx, u, kAN);
  const float n = gate_tanh(th, a, an, kN, kPwlN);
  const float d = a.sub(h, n, kD);
  const float e = a.mul(z, d, kE);
  saved[0] = r, saved[s] = z, saved[2 * s] = n, saved[3 * s] = anh, saved[4 * s] = d;
  if (slopes && sg.pwl()) slopes[0] = pwl_slope(sg, ar), slopes[s] = pwl_slope(sg, az);
  if (slopes && th.pwl()) slopes[2 * s] = pwl_slope(th, an);
  return a.add(n, e, kH);
}

// Its gradient (grads format). dh: the total gradient of h_t. Writes dgate[k*s],
// k = 0..3: da_r, da_z, da_n, da_nh; returns dd, the gradient that reaches
// h_{t-1} directly (through d), to which the reduction over the gates is added.
template <class A>
EMU_HD float gru_cell_backward(const A& a, const GateFunctions& fns, const float* saved, const float* slopes,
                               int64_t s, float dh, float* dgate) {
  using namespace gru_site;
  const FunctionApprox &sg = fns.sigmoid, &th = fns.tanh;
  const float r = saved[0], z = saved[s], n = saved[2 * s], anh = saved[3 * s], d = saved[4 * s];
  float sl[3] = {0.0f, 0.0f, 0.0f};
  if (slopes)
    for (int k = 0; k < 3; ++k) sl[k] = slopes[k * s];
  const float dz = a.mul(dh, d, kDz);
  const float dd = a.mul(dh, z, kDd);
  const float dn = a.sub(dh, dd, kDn);
  const float dan = gate_grad(Activation::Tanh, th, a, kGradN, n, sl[2], dn);
  dgate[2 * s] = dan;
  dgate[3 * s] = a.mul(dan, r, kDanh);
  const float dr = a.mul(dan, anh, kDr);
  dgate[0] = gate_grad(Activation::Sigmoid, sg, a, kGradR, r, sl[0], dr);
  dgate[s] = gate_grad(Activation::Sigmoid, sg, a, kGradZ, z, sl[1], dz);
  return dd;
}

}  // namespace emu
