// batch_norm_stats, batch_norm_normalize, batch_norm_update_running and
// batch_norm_backward on the CPU. The arithmetic (every rounding and its stage)
// is listed in core/backend_ops_nn.h; docs/layers_nn.md says why.
//
// Channels are independent, so the statistics and the backward run one channel
// per task; the element-wise steps run over (n, c) rows. The roundings around
// the reductions are numerics/norm_steps.h's, shared with the CUDA kernels; the
// reductions are reduce_arith.h's Reducer (mac_reduce's bits, with native
// binary32 operations for plain fp32).
#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/reduce_arith.h"
#include "backends/cpu/stage_rows.h"
#include "core/batchnorm_checks.h"
#include "numerics/fast_round.h"
#include "numerics/norm_steps.h"
#include "numerics/philox.h"

namespace emu {
namespace {

using namespace cpu_reduce;  // NOLINT: the shared helpers of reduce_arith.h
using cpu_rows::StageRows;
namespace st = batch_norm_stage;

using Ncs = BatchNormShape;  // checked by core/batchnorm_checks.h

// Channel c of a contiguous (N, C, S) array, in (n, s) order.
void gather_channel(const Ncs& d, const float* x, int64_t c, float* out) {
  for (int64_t n = 0; n < d.N; ++n) std::copy_n(x + (n * d.C + c) * d.S, d.S, out + n * d.S);
}

}  // namespace

// x (N,C,S) -> mean, var, var_unbiased (C)
void CpuBackend::batch_norm_stats(const MacPolicy& p, const Tensor& x, Tensor& mean, Tensor& var,
                                  Tensor& var_unbiased, DrawKey key) {
  const Ncs d = check_batch_norm_stats(x, mean, var, var_unbiased);
  const Tensor X = x.contiguous();
  const float* xp = X.data();
  const int64_t M = d.M();
  const uint64_t sites = mac_site_count(M, p.chunk);
  const Reducer sum(p, true, M), squares(p, false, M);
  const BatchNormStatsSteps steps(p.out, key.seed, key.stream);
  const StageRows dev(steps.dev);
  const DrawKey k_sum = nn_stage_key(key, st::kSum), k_sq = nn_stage_key(key, st::kSquares);
  float* mp = mean.data();
  float* vp = var.data();
  float* up = var_unbiased.data();
  // Two channels at a time (the last one alone when a task has an odd count): their sums, then their
  // sums of squares, by Reducer::run_pair, whose two chains run side by side.
  parallel_for(d.C, threads_, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> buf(static_cast<size_t>(2 * M));
    for (int64_t c = c0; c < c1; c += 2) {
      const int64_t count = std::min<int64_t>(2, c1 - c);
      double s1[2] = {0, 0}, s2[2] = {0, 0};
      float mu[2] = {0, 0};
      for (int64_t j = 0; j < count; ++j) gather_channel(d, xp, c + j, buf.data() + j * M);
      const uint64_t uc = static_cast<uint64_t>(c);
      if (count == 2)
        Reducer::run_pair(sum, buf.data(), nullptr, k_sum, uc, sum, buf.data() + M, nullptr, k_sum, uc + 1, M,
                          sites, &s1[0], &s1[1]);
      else
        s1[0] = sum.run(buf.data(), nullptr, M, k_sum, uc, sites);
      for (int64_t j = 0; j < count; ++j) {
        float* b = buf.data() + j * M;
        mu[j] = steps.channel_mean(s1[j], M, uc + j);
        for (int64_t n = 0; n < d.N; ++n)  // steps.deviation per element
          dev.sub(b + n * d.S, nullptr, mu[j], b + n * d.S, d.S,
                  static_cast<uint64_t>((n * d.C + c + j) * d.S));
      }
      if (count == 2)
        Reducer::run_pair(squares, buf.data(), buf.data(), k_sq, uc, squares, buf.data() + M, buf.data() + M,
                          k_sq, uc + 1, M, sites, &s2[0], &s2[1]);
      else
        s2[0] = squares.run(buf.data(), buf.data(), M, k_sq, uc, sites);
      for (int64_t j = 0; j < count; ++j) {
        mp[c + j] = mu[j];
        vp[c + j] = steps.channel_var(s2[j], M, uc + j);
        up[c + j] = steps.channel_var_unbiased(s2[j], M, uc + j);
      }
    }
  });
}

// x (N,C,S), mean, var (C), gamma, beta (C) or null -> y, xhat (N,C,S), invstd (C)
void CpuBackend::batch_norm_normalize(const Format& out, float eps, const Tensor& x, const Tensor& mean,
                                      const Tensor& var, const Tensor* gamma, const Tensor* beta, Tensor& y,
                                      Tensor& xhat, Tensor& invstd, DrawKey key) {
  const Ncs d = check_batch_norm_normalize(x, mean, var, gamma, beta, y, xhat, invstd);
  const Tensor X = x.contiguous();
  const std::vector<float> mu = mean.to_vector(), va = var.to_vector();
  const std::vector<float> ga = gamma ? gamma->to_vector() : std::vector<float>();
  const std::vector<float> be = beta ? beta->to_vector() : std::vector<float>();
  float* ip = invstd.data();
  const BatchNormNormalizeSteps steps(out, key.seed, key.stream);
  for (int64_t c = 0; c < d.C; ++c) ip[c] = steps.channel_invstd(va[c], eps, static_cast<uint64_t>(c));
  const float* gp = gamma ? ga.data() : nullptr;
  const float* bp = beta ? be.data() : nullptr;
  const float* xp = X.data();
  float* yp = y.data();
  float* hp = xhat.data();
  // Per (n, c) row, stage by stage: steps.normalized, then steps.affine, per element.
  const StageRows dev(steps.dev), hat(steps.hat), scale(steps.scale), shift(steps.shift);
  parallel_for(d.N * d.C, threads_, 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % d.C, i = r * d.S;
      const uint64_t ui = static_cast<uint64_t>(i);
      float* h = hp + i;
      float* v = yp + i;
      dev.sub(xp + i, nullptr, mu[c], h, d.S, ui);
      hat.mul(h, nullptr, ip[c], h, d.S, ui);
      if (gp)
        scale.mul(h, nullptr, gp[c], v, d.S, ui);
      else
        std::copy_n(h, d.S, v);
      if (bp) shift.add(v, nullptr, bp[c], v, d.S, ui);
    }
  });
}

// mean, var_unbiased (C); running_mean, running_var (C) updated in place
void CpuBackend::batch_norm_update_running(const Format& out, float momentum, const Tensor& mean,
                                           const Tensor& var_unbiased, Tensor& running_mean,
                                           Tensor& running_var, DrawKey key) {
  const int64_t C = check_batch_norm_update_running(mean, var_unbiased, running_mean, running_var);
  const std::vector<float> mu = mean.to_vector(), vu = var_unbiased.to_vector();
  const float keep = batch_norm_keep(momentum);
  float* rm = running_mean.data();
  float* rv = running_var.data();
  auto update = [&](const std::vector<float>& v, float* r, uint32_t stage0) {
    const BatchNormRunningSteps steps(out, key.seed, key.stream, stage0);
    for (int64_t c = 0; c < C; ++c) r[c] = steps.updated(momentum, keep, v[c], r[c], c);
  };
  update(mu, rm, 0);
  update(vu, rv, st::kVarRun);
}

// gy, xhat (N,C,S), invstd (C), gamma (C) or null -> gx (N,C,S), ggamma, gbeta (C), each optional
void CpuBackend::batch_norm_backward(const MacPolicy& p, bool batch_stats, const Tensor& gy,
                                     const Tensor& xhat, const Tensor& invstd, const Tensor* gamma,
                                     Tensor* gx, Tensor* ggamma, Tensor* gbeta, DrawKey key) {
  const Ncs d = check_batch_norm_backward(gy, xhat, invstd, gamma, gx, ggamma, gbeta);
  const Tensor G = gy.contiguous(), H = xhat.contiguous();
  const float* gp = G.data();
  const float* hp = H.data();
  const std::vector<float> inv = invstd.to_vector();
  const std::vector<float> ga = gamma ? gamma->to_vector() : std::vector<float>();
  const int64_t M = d.M();
  const uint64_t sites = mac_site_count(M, p.chunk);
  const Reducer sum(p, true, M), products(p, false, M);
  const DrawKey k_sg = nn_stage_key(key, st::kGradSum), k_sgx = nn_stage_key(key, st::kGradDot);
  const BatchNormBackwardSteps steps(p.out, key.seed, key.stream);
  const float* gap = gamma ? ga.data() : nullptr;
  const bool need_sums = ggamma || gbeta || (gx && batch_stats);
  const StageRows t_row(steps.t), u_row(steps.u), v_row(steps.v), gx_row(steps.gx);
  float* xp = gx ? gx->data() : nullptr;
  parallel_for(d.C, threads_, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> g, h;  // channel c of gy and xhat, gathered where run_pair_rows cannot serve
    std::vector<float> t(static_cast<size_t>(d.S)), u(t.size());  // a row of R(gy - mg), R(xhat * mgx)
    for (int64_t c = c0; c < c1; ++c) {
      const uint64_t uc = static_cast<uint64_t>(c);
      double sg = 0, sgx = 0;
      // The two sums over channel c where gy and xhat hold it (fp32 and its kin), else gathered.
      if (need_sums && !Reducer::run_pair_rows(sum, gp + c * d.S, nullptr, products, gp + c * d.S,
                                               hp + c * d.S, d.N, d.S, d.C * d.S, &sg, &sgx)) {
        g.resize(static_cast<size_t>(M));
        h.resize(static_cast<size_t>(M));
        gather_channel(d, gp, c, g.data());
        gather_channel(d, hp, c, h.data());
        Reducer::run_pair(sum, g.data(), nullptr, k_sg, uc, products, g.data(), h.data(), k_sgx, uc, M, sites,
                          &sg, &sgx);
      }
      if (gbeta) gbeta->data()[c] = steps.beta_grad(sg, uc);
      if (ggamma) ggamma->data()[c] = steps.gamma_grad(sgx, uc);
      if (!xp) continue;
      const float k = steps.scale(gap, inv[c], c);
      const float mg = batch_stats ? steps.mean_grad(sg, M, uc) : 0.0f;
      const float mgx = batch_stats ? steps.mean_dot(sgx, M, uc) : 0.0f;
      for (int64_t n = 0; n < d.N; ++n) {  // steps.input_grad(_running) per element
        const int64_t i = (n * d.C + c) * d.S;
        const uint64_t ui = static_cast<uint64_t>(i);
        if (!batch_stats) {
          gx_row.mul(gp + i, nullptr, k, xp + i, d.S, ui);
          continue;
        }
        t_row.sub(gp + i, nullptr, mg, t.data(), d.S, ui);
        u_row.mul(hp + i, nullptr, mgx, u.data(), d.S, ui);
        v_row.sub(t.data(), u.data(), 0.0f, t.data(), d.S, ui);
        gx_row.mul(t.data(), nullptr, k, xp + i, d.S, ui);
      }
    }
  });
}

}  // namespace emu
