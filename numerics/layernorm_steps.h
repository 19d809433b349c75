// The steps of layer_norm_forward and layer_norm_backward between their
// reductions (core/backend_ops_attention.h lists every rounding and its stage;
// docs/layers_attention.md says why), host+device. The CPU loops
// (backends/cpu/layernorm_ops.cpp) and the CUDA kernels
// (backends/cuda/ops/layernorm.cu) call these, so the formulas, their stages
// and their draw indices have one definition. Each rounding is a StageRound
// (numerics/stage_round.h) of the op's `out` format on stream key.stream + stage;
// a row step draws at the row r, an element step at the element's row-major
// index r*D + k, a feature step at the feature k.
#pragma once

#include <cstdint>

#include "numerics/functions.h"
#include "numerics/mac.h"
#include "numerics/row_reduce.h"
#include "numerics/stage_round.h"

namespace emu {

// Stages (stream offsets) of the two ops.
namespace layer_norm_stage {
// Forward.
constexpr uint32_t kSum = 0;      // sum1 = sum_k x_k (a reduction, row r)
constexpr uint32_t kMean = 1;     // mean = R(sum1 / D)
constexpr uint32_t kDev = 2;      // d_k = R(x_k - mean)
constexpr uint32_t kSquares = 3;  // sum2 = sum_k d_k d_k (a reduction, row r)
constexpr uint32_t kVar = 4;      // var = R(sum2 / D)
constexpr uint32_t kVarEps = 5;   // ve = R(var + eps)
constexpr uint32_t kInvstd = 6;   // invstd = R(rsqrt(ve))
constexpr uint32_t kHat = 7;      // xhat_k = R(d_k * invstd)
constexpr uint32_t kScale = 8;    // t_k = R(xhat_k * gamma_k)
constexpr uint32_t kShift = 9;    // y_k = R(t_k + beta_k)
// Backward.
constexpr uint32_t kGammaGrad = 0;  // gh_k = R(gy_k * gamma_k)
constexpr uint32_t kRowSum = 1;     // sg = sum_k gh_k (a reduction, row r)
constexpr uint32_t kRowDot = 2;     // sgx = sum_k gh_k xhat_k (a reduction, row r)
constexpr uint32_t kMeanGrad = 3;   // mg = R(sg / D)
constexpr uint32_t kMeanDot = 4;    // mgx = R(sgx / D)
constexpr uint32_t kT = 5;          // t = R(gh - mg)
constexpr uint32_t kU = 6;          // u = R(xhat * mgx)
constexpr uint32_t kV = 7;          // v = R(t - u)
constexpr uint32_t kGx = 8;         // gx = R(v * invstd)
constexpr uint32_t kGammaSum = 9;   // sum over rows of gy xhat (a reduction, feature k)
constexpr uint32_t kBetaSum = 10;   // sum over rows of gy (a reduction, feature k)
constexpr uint32_t kGammaOut = 11;  // ggamma = R(that sum)
constexpr uint32_t kBetaOut = 12;   // gbeta = R(that sum)
}  // namespace layer_norm_stage

// The reduction policies: a plain sum (mul exact) and the products under p.mul,
// each left in the accumulator's own format (the quotients and roundings after
// them are the op's own), and whether native binary32 arithmetic gives their
// bits (an approximate multiplier's table never: only mac_reduce applies it).
EMU_HD MacPolicy layer_norm_sum_policy(const MacPolicy& p) { return plain_sum_policy(p); }
EMU_HD MacPolicy layer_norm_dot_policy(const MacPolicy& p) { return accumulate_only(p); }
EMU_HD bool layer_norm_native_sum(const MacPolicy& p) { return native_sum(p); }
EMU_HD bool layer_norm_native_dot(const MacPolicy& p) {
  return native_dot(accumulate_only(p)) && !custom_mul(p);
}

// layer_norm_forward's roundings after the reductions.
struct LayerNormForwardSteps {
  StageRound mean, dev, var, ve, inv, hat, scale, shift;

  EMU_HD LayerNormForwardSteps(const Format& out, uint64_t seed, uint64_t stream)
      : mean(out, seed, stream + layer_norm_stage::kMean),
        dev(out, seed, stream + layer_norm_stage::kDev),
        var(out, seed, stream + layer_norm_stage::kVar),
        ve(out, seed, stream + layer_norm_stage::kVarEps),
        inv(out, seed, stream + layer_norm_stage::kInvstd),
        hat(out, seed, stream + layer_norm_stage::kHat),
        scale(out, seed, stream + layer_norm_stage::kScale),
        shift(out, seed, stream + layer_norm_stage::kShift) {}

  // mean = R(sum1 / D), the exact quotient (row r).
  EMU_HD float row_mean(double sum1, int64_t D, uint64_t r) const {
    return mean.div(sum1, static_cast<double>(D), r);
  }
  // d = R(x - mean) (element i).
  EMU_HD float deviation(float x, float m, uint64_t i) const { return dev.sub(x, m, i); }
  // invstd = R(rsqrt(R(R(sum2 / D) + eps))) (row r).
  EMU_HD float row_invstd(double sum2, int64_t D, float eps, uint64_t r) const {
    const float v = var.div(sum2, static_cast<double>(D), r);
    return inv.round(fn_rsqrt(ve.add(v, eps, r)), r);
  }
  // xhat = R(d * invstd) (element i).
  EMU_HD float normalized(float d, float invstd, uint64_t i) const { return hat.mul(d, invstd, i); }
  // y = R(R(xhat * gamma) + beta), a missing gamma or beta skipping its step (element i).
  EMU_HD float affine(float h, const float* gamma, const float* beta, int64_t k, uint64_t i) const {
    float v = h;
    if (gamma) v = scale.mul(v, gamma[k], i);
    if (beta) v = shift.add(v, beta[k], i);
    return v;
  }
};

// layer_norm_backward's roundings after (and before) the reductions.
struct LayerNormBackwardSteps {
  StageRound gh, mg, mgx, t, u, v, gx, ggamma, gbeta;

  EMU_HD LayerNormBackwardSteps(const Format& out, uint64_t seed, uint64_t stream)
      : gh(out, seed, stream + layer_norm_stage::kGammaGrad),
        mg(out, seed, stream + layer_norm_stage::kMeanGrad),
        mgx(out, seed, stream + layer_norm_stage::kMeanDot),
        t(out, seed, stream + layer_norm_stage::kT),
        u(out, seed, stream + layer_norm_stage::kU),
        v(out, seed, stream + layer_norm_stage::kV),
        gx(out, seed, stream + layer_norm_stage::kGx),
        ggamma(out, seed, stream + layer_norm_stage::kGammaOut),
        gbeta(out, seed, stream + layer_norm_stage::kBetaOut) {}

  // gh = R(gy * gamma) (element i); the caller uses gy itself without gamma.
  EMU_HD float scaled_grad(float gy, float gamma, uint64_t i) const { return gh.mul(gy, gamma, i); }
  // mg = R(sg / D), mgx = R(sgx / D) (row r).
  EMU_HD float row_mean_grad(double sg, int64_t D, uint64_t r) const {
    return mg.div(sg, static_cast<double>(D), r);
  }
  EMU_HD float row_mean_dot(double sgx, int64_t D, uint64_t r) const {
    return mgx.div(sgx, static_cast<double>(D), r);
  }
  // gx = R(R(R(gh - mg) - R(xhat * mgx)) * invstd) (element i).
  EMU_HD float input_grad(float g, float xhat, float m_g, float m_gx, float invstd, uint64_t i) const {
    const float tt = t.sub(g, m_g, i);
    const float uu = u.mul(xhat, m_gx, i);
    return gx.mul(v.sub(tt, uu, i), invstd, i);
  }
  // ggamma = R(sum over rows of gy xhat), gbeta = R(sum over rows of gy) (feature k).
  EMU_HD float gamma_grad(double sum, uint64_t k) const { return ggamma.round(sum, k); }
  EMU_HD float beta_grad(double sum, uint64_t k) const { return gbeta.round(sum, k); }
};

}  // namespace emu
