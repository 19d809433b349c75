// batch_norm_stats, batch_norm_normalize, batch_norm_update_running and
// batch_norm_backward on the CPU. The arithmetic (every rounding and its stage)
// is listed in core/backend_ops_nn.h; docs/layers_nn.md says why.
//
// Channels are independent, so the statistics and the backward run one channel
// per task; the element-wise steps run over (n, c) rows. Plain fp32 formats use
// binary32 operations, which are exactly those roundings.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/reduce_arith.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/op_checks.h"
#include "numerics/fast_round.h"
#include "numerics/functions.h"
#include "numerics/philox.h"

namespace emu {
namespace {

using namespace cpu_reduce;  // NOLINT: the shared helpers of reduce_arith.h
using cpu_checks::check_result;
using cpu_checks::check_shape;

struct Ncs {
  int64_t N, C, S;
  int64_t M() const { return N * S; }
};

Ncs ncs_of(const char* op, const char* what, const Tensor& t) {
  if (t.ndim() != 3) throw std::invalid_argument(fmt::format("{}: {} must be (N, C, S), got {}", op, what, shape_string(t.shape())));
  return Ncs{t.dim(0), t.dim(1), t.dim(2)};
}

// Channel c of a contiguous (N, C, S) array, in (n, s) order.
void gather_channel(const Ncs& d, const float* x, int64_t c, float* out) {
  for (int64_t n = 0; n < d.N; ++n) std::copy_n(x + (n * d.C + c) * d.S, d.S, out + n * d.S);
}

}  // namespace

// x (N,C,S) -> mean, var, var_unbiased (C)
void CpuBackend::batch_norm_stats(const MacPolicy& p, const Tensor& x, Tensor& mean, Tensor& var, Tensor& var_unbiased,
                                  DrawKey key) {
  const char* op = "batch_norm_stats";
  const Ncs d = ncs_of(op, "x", x);
  check_result(op, "mean", mean, {d.C});
  check_result(op, "var", var, {d.C});
  check_result(op, "var_unbiased", var_unbiased, {d.C});
  const Tensor X = x.contiguous();
  const float* xp = X.data();
  const int64_t M = d.M();
  const uint64_t sites = mac_site_count(M, p.chunk);
  const Reducer sum(p, true, M), squares(p, false, M);
  const Rounder r_mean(p.out, nn_stage_key(key, 1)), r_dev(p.out, nn_stage_key(key, 2));
  const Rounder r_var(p.out, nn_stage_key(key, 4)), r_varu(p.out, nn_stage_key(key, 5));
  const DrawKey k_sum = nn_stage_key(key, 0), k_sq = nn_stage_key(key, 3);
  float* mp = mean.data();
  float* vp = var.data();
  float* up = var_unbiased.data();
  parallel_for(d.C, threads_, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> buf(static_cast<size_t>(M));
    for (int64_t c = c0; c < c1; ++c) {
      const uint64_t uc = static_cast<uint64_t>(c);
      gather_channel(d, xp, c, buf.data());
      const double s1 = sum.run(buf.data(), nullptr, M, k_sum, uc, sites);
      const float mu = r_mean.div(s1, static_cast<double>(M), uc);
      for (int64_t n = 0; n < d.N; ++n)
        for (int64_t s = 0; s < d.S; ++s) {
          const int64_t k = n * d.S + s;
          buf[k] = r_dev.sub(buf[k], mu, static_cast<uint64_t>((n * d.C + c) * d.S + s));
        }
      const double s2 = squares.run(buf.data(), buf.data(), M, k_sq, uc, sites);
      mp[c] = mu;
      vp[c] = r_var.div(s2, static_cast<double>(M), uc);
      up[c] = M > 1 ? r_varu.div(s2, static_cast<double>(M - 1), uc) : static_cast<float>(quiet_nan());
    }
  });
}

// x (N,C,S), mean, var (C), gamma, beta (C) or null -> y, xhat (N,C,S), invstd (C)
void CpuBackend::batch_norm_normalize(const Format& out, float eps, const Tensor& x, const Tensor& mean,
                                      const Tensor& var, const Tensor* gamma, const Tensor* beta, Tensor& y,
                                      Tensor& xhat, Tensor& invstd, DrawKey key) {
  const char* op = "batch_norm_normalize";
  const Ncs d = ncs_of(op, "x", x);
  check_shape(op, "mean", mean, {d.C});
  check_shape(op, "var", var, {d.C});
  if (gamma) check_shape(op, "gamma", *gamma, {d.C});
  if (beta) check_shape(op, "beta", *beta, {d.C});
  check_result(op, "y", y, x.shape());
  check_result(op, "xhat", xhat, x.shape());
  check_result(op, "invstd", invstd, {d.C});
  const Tensor X = x.contiguous();
  const std::vector<float> mu = mean.to_vector(), va = var.to_vector();
  const std::vector<float> ga = gamma ? gamma->to_vector() : std::vector<float>();
  const std::vector<float> be = beta ? beta->to_vector() : std::vector<float>();
  float* ip = invstd.data();
  const Rounder r_ve(out, nn_stage_key(key, 0)), r_inv(out, nn_stage_key(key, 1));
  for (int64_t c = 0; c < d.C; ++c) {
    const uint64_t uc = static_cast<uint64_t>(c);
    ip[c] = r_inv.round(fn_rsqrt(r_ve.add(va[c], eps, uc)), uc);
  }
  const Rounder r_dev(out, nn_stage_key(key, 2)), r_hat(out, nn_stage_key(key, 3));
  const Rounder r_scale(out, nn_stage_key(key, 4)), r_shift(out, nn_stage_key(key, 5));
  const float* xp = X.data();
  float* yp = y.data();
  float* hp = xhat.data();
  parallel_for(d.N * d.C, threads_, 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % d.C;
      for (int64_t s = 0; s < d.S; ++s) {
        const int64_t i = r * d.S + s;
        const uint64_t ui = static_cast<uint64_t>(i);
        const float h = r_hat.mul(r_dev.sub(xp[i], mu[c], ui), ip[c], ui);
        float v = h;
        if (gamma) v = r_scale.mul(v, ga[c], ui);
        if (beta) v = r_shift.add(v, be[c], ui);
        hp[i] = h;
        yp[i] = v;
      }
    }
  });
}

// mean, var_unbiased (C); running_mean, running_var (C) updated in place
void CpuBackend::batch_norm_update_running(const Format& out, float momentum, const Tensor& mean,
                                           const Tensor& var_unbiased, Tensor& running_mean, Tensor& running_var,
                                           DrawKey key) {
  const char* op = "batch_norm_update_running";
  const int64_t C = mean.numel();
  check_shape(op, "mean", mean, {C});
  check_shape(op, "var_unbiased", var_unbiased, {C});
  check_result(op, "running_mean", running_mean, {C});
  check_result(op, "running_var", running_var, {C});
  const std::vector<float> mu = mean.to_vector(), vu = var_unbiased.to_vector();
  const float keep = 1.0f - momentum;  // binary32, on purpose: the constant PyTorch's fp32 kernels use
  float* rm = running_mean.data();
  float* rv = running_var.data();
  auto update = [&](const std::vector<float>& v, float* r, uint32_t stage0) {
    const Rounder r_new(out, nn_stage_key(key, stage0)), r_old(out, nn_stage_key(key, stage0 + 1));
    const Rounder r_sum(out, nn_stage_key(key, stage0 + 2));
    for (int64_t c = 0; c < C; ++c) {
      const uint64_t uc = static_cast<uint64_t>(c);
      r[c] = r_sum.add(r_new.mul(momentum, v[c], uc), r_old.mul(keep, r[c], uc), uc);
    }
  };
  update(mu, rm, 0);
  update(vu, rv, 3);
}

// gy, xhat (N,C,S), invstd (C), gamma (C) or null -> gx (N,C,S), ggamma, gbeta (C), each optional
void CpuBackend::batch_norm_backward(const MacPolicy& p, bool batch_stats, const Tensor& gy, const Tensor& xhat,
                                     const Tensor& invstd, const Tensor* gamma, Tensor* gx, Tensor* ggamma,
                                     Tensor* gbeta, DrawKey key) {
  const char* op = "batch_norm_backward";
  const Ncs d = ncs_of(op, "gy", gy);
  check_shape(op, "xhat", xhat, gy.shape());
  check_shape(op, "invstd", invstd, {d.C});
  if (gamma) check_shape(op, "gamma", *gamma, {d.C});
  if (gx) check_result(op, "gx", *gx, gy.shape());
  if (ggamma) check_result(op, "ggamma", *ggamma, {d.C});
  if (gbeta) check_result(op, "gbeta", *gbeta, {d.C});
  const Tensor G = gy.contiguous(), H = xhat.contiguous();
  const float* gp = G.data();
  const float* hp = H.data();
  const std::vector<float> inv = invstd.to_vector();
  const std::vector<float> ga = gamma ? gamma->to_vector() : std::vector<float>();
  const int64_t M = d.M();
  const uint64_t sites = mac_site_count(M, p.chunk);
  const Reducer sum(p, true, M), products(p, false, M);
  const DrawKey k_sg = nn_stage_key(key, 0), k_sgx = nn_stage_key(key, 1);
  const Rounder r_gbeta(p.out, nn_stage_key(key, 2)), r_ggamma(p.out, nn_stage_key(key, 3));
  const Rounder r_mg(p.out, nn_stage_key(key, 4)), r_mgx(p.out, nn_stage_key(key, 5));
  const Rounder r_k(p.out, nn_stage_key(key, 6)), r_t(p.out, nn_stage_key(key, 7));
  const Rounder r_u(p.out, nn_stage_key(key, 8)), r_v(p.out, nn_stage_key(key, 9));
  const Rounder r_gx(p.out, nn_stage_key(key, 10));
  const bool need_sums = ggamma || gbeta || (gx && batch_stats);
  float* xp = gx ? gx->data() : nullptr;
  parallel_for(d.C, threads_, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> g(static_cast<size_t>(need_sums ? M : 0)), h(g.size());
    for (int64_t c = c0; c < c1; ++c) {
      const uint64_t uc = static_cast<uint64_t>(c);
      double sg = 0, sgx = 0;
      if (need_sums) {
        gather_channel(d, gp, c, g.data());
        gather_channel(d, hp, c, h.data());
        sg = sum.run(g.data(), nullptr, M, k_sg, uc, sites);
        sgx = products.run(g.data(), h.data(), M, k_sgx, uc, sites);
      }
      if (gbeta) gbeta->data()[c] = r_gbeta.round(sg, uc);
      if (ggamma) ggamma->data()[c] = r_ggamma.round(sgx, uc);
      if (!xp) continue;
      const float k = gamma ? r_k.mul(ga[c], inv[c], uc) : r_k.round(inv[c], uc);
      const float mg = batch_stats ? r_mg.div(sg, static_cast<double>(M), uc) : 0.0f;
      const float mgx = batch_stats ? r_mgx.div(sgx, static_cast<double>(M), uc) : 0.0f;
      for (int64_t n = 0; n < d.N; ++n)
        for (int64_t s = 0; s < d.S; ++s) {
          const int64_t i = (n * d.C + c) * d.S + s;
          const uint64_t ui = static_cast<uint64_t>(i);
          if (batch_stats) {
            const float v = r_v.sub(r_t.sub(gp[i], mg, ui), r_u.mul(hp[i], mgx, ui), ui);
            xp[i] = r_gx.mul(v, k, ui);
          } else {
            xp[i] = r_gx.mul(gp[i], k, ui);
          }
        }
    }
  });
}

}  // namespace emu
