// The steps of the batch-norm ops around their reductions (core/backend_ops_nn.h
// lists every rounding and its stage; docs/layers_nn.md says why), host+device.
// The CPU loops (backends/cpu/norm_ops.cpp) and the CUDA kernels
// (backends/cuda/ops/batchnorm.cu) call these, so the formulas, their stages and
// their draw indices have one definition. Each rounding is a StageRound
// (numerics/stage_round.h) of the op's `out` format on stream key.stream +
// stage; a channel step draws at the channel c, an element step at the
// element's row-major index (n*C + c)*S + s.
#pragma once

#include <cstdint>

#include "numerics/functions.h"
#include "numerics/mac.h"
#include "numerics/row_reduce.h"
#include "numerics/stage_round.h"

namespace emu {

// Stages (stream offsets) of the four ops.
namespace batch_norm_stage {
// batch_norm_stats.
constexpr uint32_t kSum = 0;      // sum1 = sum of x over (n, s) (a reduction, channel c)
constexpr uint32_t kMean = 1;     // mean = R(sum1 / M)
constexpr uint32_t kDev = 2;      // d = R(x - mean)
constexpr uint32_t kSquares = 3;  // sum2 = sum of d*d (a reduction, channel c)
constexpr uint32_t kVar = 4;      // var = R(sum2 / M)
constexpr uint32_t kVarUnb = 5;   // var_unbiased = R(sum2 / (M - 1))
// batch_norm_normalize.
constexpr uint32_t kVarEps = 0;   // ve = R(var + eps)
constexpr uint32_t kInvstd = 1;   // invstd = R(rsqrt(ve))
constexpr uint32_t kNormDev = 2;  // d = R(x - mean)
constexpr uint32_t kHat = 3;      // xhat = R(d * invstd)
constexpr uint32_t kScale = 4;    // t = R(xhat * gamma)
constexpr uint32_t kShift = 5;    // y = R(t + beta)
// batch_norm_update_running: the mean's three, then the variance's at +3.
constexpr uint32_t kNew = 0;     // R(momentum * v)
constexpr uint32_t kOld = 1;     // R((1 - momentum) * r)
constexpr uint32_t kSumRun = 2;  // r' = R(new + old)
constexpr uint32_t kVarRun = 3;  // offset of the variance's stages
// batch_norm_backward.
constexpr uint32_t kGradSum = 0;   // sg = sum of gy (a reduction, channel c)
constexpr uint32_t kGradDot = 1;   // sgx = sum of gy*xhat (a reduction, channel c)
constexpr uint32_t kBeta = 2;      // gbeta = R(sg)
constexpr uint32_t kGamma = 3;     // ggamma = R(sgx)
constexpr uint32_t kMeanGrad = 4;  // mg = R(sg / M)
constexpr uint32_t kMeanDot = 5;   // mgx = R(sgx / M)
constexpr uint32_t kK = 6;         // k = R(gamma * invstd), or R(invstd)
constexpr uint32_t kT = 7;         // t = R(gy - mg)
constexpr uint32_t kU = 8;         // u = R(xhat * mgx)
constexpr uint32_t kV = 9;         // v = R(t - u)
constexpr uint32_t kGx = 10;       // gx = R(v * k), or R(gy * k) with running statistics
}  // namespace batch_norm_stage

// The reduction policies: a plain sum (mul exact) and a sum of products under
// p.mul, each left in the accumulator's own format (the quotients and roundings
// after them are the op's own).
EMU_HD MacPolicy batch_norm_sum_policy(const MacPolicy& p) { return plain_sum_policy(p); }
EMU_HD MacPolicy batch_norm_dot_policy(const MacPolicy& p) { return accumulate_only(p); }

// batch_norm_stats' roundings after its reductions.
struct BatchNormStatsSteps {
  StageRound mean, dev, var, var_unb;

  EMU_HD BatchNormStatsSteps(const Format& out, uint64_t seed, uint64_t stream)
      : mean(out, seed, stream + batch_norm_stage::kMean),
        dev(out, seed, stream + batch_norm_stage::kDev),
        var(out, seed, stream + batch_norm_stage::kVar),
        var_unb(out, seed, stream + batch_norm_stage::kVarUnb) {}

  // mean = R(sum1 / M), the exact quotient (channel c).
  EMU_HD float channel_mean(double sum1, int64_t M, uint64_t c) const {
    return mean.div(sum1, static_cast<double>(M), c);
  }
  // d = R(x - mean) (element i).
  EMU_HD float deviation(float x, float m, uint64_t i) const { return dev.sub(x, m, i); }
  // var = R(sum2 / M) (channel c).
  EMU_HD float channel_var(double sum2, int64_t M, uint64_t c) const {
    return var.div(sum2, static_cast<double>(M), c);
  }
  // var_unbiased = R(sum2 / (M - 1)), NaN for M = 1 (one value has no unbiased variance).
  EMU_HD float channel_var_unbiased(double sum2, int64_t M, uint64_t c) const {
    return M > 1 ? var_unb.div(sum2, static_cast<double>(M - 1), c) : static_cast<float>(quiet_nan());
  }
};

// batch_norm_normalize's roundings.
struct BatchNormNormalizeSteps {
  StageRound ve, inv, dev, hat, scale, shift;

  EMU_HD BatchNormNormalizeSteps(const Format& out, uint64_t seed, uint64_t stream)
      : ve(out, seed, stream + batch_norm_stage::kVarEps),
        inv(out, seed, stream + batch_norm_stage::kInvstd),
        dev(out, seed, stream + batch_norm_stage::kNormDev),
        hat(out, seed, stream + batch_norm_stage::kHat),
        scale(out, seed, stream + batch_norm_stage::kScale),
        shift(out, seed, stream + batch_norm_stage::kShift) {}

  // invstd = R(rsqrt(R(var + eps))) (channel c).
  EMU_HD float channel_invstd(float var, float eps, uint64_t c) const {
    return inv.round(fn_rsqrt(ve.add(var, eps, c)), c);
  }
  // xhat = R(R(x - mean) * invstd) (element i).
  EMU_HD float normalized(float x, float m, float invstd, uint64_t i) const {
    return hat.mul(dev.sub(x, m, i), invstd, i);
  }
  // y = R(R(xhat * gamma) + beta), a missing gamma or beta skipping its step (element i).
  EMU_HD float affine(float h, const float* gamma, const float* beta, int64_t c, uint64_t i) const {
    float v = h;
    if (gamma) v = scale.mul(v, gamma[c], i);
    if (beta) v = shift.add(v, beta[c], i);
    return v;
  }
};

// batch_norm_update_running's roundings of one statistic (the mean with stage0 = 0,
// the variance with stage0 = kVarRun): r' = R(R(momentum * v) + R(keep * r)),
// keep = 1 - momentum in binary32 (channel c).
struct BatchNormRunningSteps {
  StageRound fresh, old, sum;

  EMU_HD BatchNormRunningSteps(const Format& out, uint64_t seed, uint64_t stream, uint32_t stage0)
      : fresh(out, seed, stream + stage0 + batch_norm_stage::kNew),
        old(out, seed, stream + stage0 + batch_norm_stage::kOld),
        sum(out, seed, stream + stage0 + batch_norm_stage::kSumRun) {}

  EMU_HD float updated(float momentum, float keep, float v, float r, uint64_t c) const {
    return sum.add(fresh.mul(momentum, v, c), old.mul(keep, r, c), c);
  }
};

// 1 - momentum in binary32, on purpose: the constant PyTorch's fp32 kernels use.
EMU_HD float batch_norm_keep(float momentum) { return fp32::sub(1.0f, momentum); }

// batch_norm_backward's roundings after its reductions.
struct BatchNormBackwardSteps {
  StageRound beta, gamma, mg, mgx, k, t, u, v, gx;

  EMU_HD BatchNormBackwardSteps(const Format& out, uint64_t seed, uint64_t stream)
      : beta(out, seed, stream + batch_norm_stage::kBeta),
        gamma(out, seed, stream + batch_norm_stage::kGamma),
        mg(out, seed, stream + batch_norm_stage::kMeanGrad),
        mgx(out, seed, stream + batch_norm_stage::kMeanDot),
        k(out, seed, stream + batch_norm_stage::kK),
        t(out, seed, stream + batch_norm_stage::kT),
        u(out, seed, stream + batch_norm_stage::kU),
        v(out, seed, stream + batch_norm_stage::kV),
        gx(out, seed, stream + batch_norm_stage::kGx) {}

  // gbeta = R(sg), ggamma = R(sgx) (channel c).
  EMU_HD float beta_grad(double sg, uint64_t c) const { return beta.round(sg, c); }
  EMU_HD float gamma_grad(double sgx, uint64_t c) const { return gamma.round(sgx, c); }
  // k = R(gamma * invstd), or R(invstd) without gamma (channel c).
  EMU_HD float scale(const float* g, float invstd, int64_t c) const {
    const uint64_t uc = static_cast<uint64_t>(c);
    return g ? k.mul(g[c], invstd, uc) : k.round(invstd, uc);
  }
  // mg = R(sg / M), mgx = R(sgx / M) (channel c; batch statistics only).
  EMU_HD float mean_grad(double sg, int64_t M, uint64_t c) const {
    return mg.div(sg, static_cast<double>(M), c);
  }
  EMU_HD float mean_dot(double sgx, int64_t M, uint64_t c) const {
    return mgx.div(sgx, static_cast<double>(M), c);
  }
  // gx = R(R(R(gy - mg) - R(xhat * mgx)) * k) with batch statistics (element i).
  EMU_HD float input_grad(float g, float h, float m_g, float m_gx, float kk, uint64_t i) const {
    const float tt = t.sub(g, m_g, i);
    const float uu = u.mul(h, m_gx, i);
    return gx.mul(v.sub(tt, uu, i), kk, i);
  }
  // gx = R(gy * k) with running statistics (element i).
  EMU_HD float input_grad_running(float g, float kk, uint64_t i) const { return gx.mul(g, kk, i); }
};

}  // namespace emu
