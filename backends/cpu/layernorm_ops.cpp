// layer_norm_forward and layer_norm_backward on the CPU. Every rounding and its
// stage is listed in core/backend_ops_attention.h; docs/layers_attention.md says
// why. Rows are independent, so the forward and the row part of the backward
// run one block of rows per thread; the per-feature sums of the parameter
// gradients run one block of features per thread. The roundings between the
// reductions are numerics/layernorm_steps.h's, shared with the CUDA kernels;
// the reductions are reduce_arith.h's Reducer (mac_reduce's bits, with native
// binary32 operations for plain fp32).
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/reduce_arith.h"
#include "core/layernorm_checks.h"
#include "numerics/layernorm_steps.h"

namespace emu {
namespace {

using namespace cpu_reduce;  // NOLINT: the shared helpers of reduce_arith.h

constexpr int64_t kRowGrainElements = int64_t{1} << 13;

int64_t row_grain(int64_t D) { return std::max<int64_t>(1, kRowGrainElements / std::max<int64_t>(1, D)); }

}  // namespace

// x (R,D), gamma, beta (D) or null -> y, xhat (R,D), invstd (R)
void CpuBackend::layer_norm_forward(const MacPolicy& p, float eps, const Tensor& x, const Tensor* gamma,
                                    const Tensor* beta, Tensor& y, Tensor& xhat, Tensor& invstd,
                                    DrawKey key) {
  const LayerNormRows d = check_layer_norm_forward(x, gamma, beta, y, xhat, invstd);
  if (d.R == 0 || d.D == 0) return;
  const Tensor X = x.contiguous();
  const std::vector<float> ga = gamma ? gamma->to_vector() : std::vector<float>();
  const std::vector<float> be = beta ? beta->to_vector() : std::vector<float>();
  const uint64_t sites = mac_site_count(d.D, p.chunk);
  const Reducer sum(p, true, d.D), squares(p, false, d.D);
  const DrawKey k_sum = nn_stage_key(key, layer_norm_stage::kSum);
  const DrawKey k_sq = nn_stage_key(key, layer_norm_stage::kSquares);
  const LayerNormForwardSteps steps(p.out, key.seed, key.stream);
  const float* xp = X.data();
  float* yp = y.data();
  float* hp = xhat.data();
  float* ip = invstd.data();
  const float* gp = gamma ? ga.data() : nullptr;
  const float* bp = beta ? be.data() : nullptr;
  parallel_for(d.R, threads_, row_grain(d.D), [&](int64_t r0, int64_t r1) {
    std::vector<float> dev(static_cast<size_t>(d.D));
    for (int64_t r = r0; r < r1; ++r) {
      const uint64_t ur = static_cast<uint64_t>(r);
      const float* xr = xp + r * d.D;
      const float mean = steps.row_mean(sum.run(xr, nullptr, d.D, k_sum, ur, sites), d.D, ur);
      for (int64_t k = 0; k < d.D; ++k)
        dev[k] = steps.deviation(xr[k], mean, static_cast<uint64_t>(r * d.D + k));
      const float inv =
          steps.row_invstd(squares.run(dev.data(), dev.data(), d.D, k_sq, ur, sites), d.D, eps, ur);
      ip[r] = inv;
      float* hr = hp + r * d.D;
      float* yr = yp + r * d.D;
      for (int64_t k = 0; k < d.D; ++k) {
        const uint64_t ui = static_cast<uint64_t>(r * d.D + k);
        const float h = steps.normalized(dev[k], inv, ui);
        hr[k] = h;
        yr[k] = steps.affine(h, gp, bp, k, ui);
      }
    }
  });
}

// gy, xhat (R,D), invstd (R), gamma (D) or null -> gx (R,D), ggamma, gbeta (D), each optional
void CpuBackend::layer_norm_backward(const MacPolicy& p, const Tensor& gy, const Tensor& xhat,
                                     const Tensor& invstd, const Tensor* gamma, Tensor* gx, Tensor* ggamma,
                                     Tensor* gbeta, DrawKey key) {
  const LayerNormRows d = check_layer_norm_backward(gy, xhat, invstd, gamma, gx, ggamma, gbeta);
  if (d.R == 0 || d.D == 0) {
    if (ggamma) ggamma->fill(0.0f);
    if (gbeta) gbeta->fill(0.0f);
    return;
  }
  const Tensor G = gy.contiguous(), H = xhat.contiguous();
  const float* gp = G.data();
  const float* hp = H.data();
  const LayerNormBackwardSteps steps(p.out, key.seed, key.stream);

  if (ggamma || gbeta) {
    // Per feature: reductions over the rows, ascending (one gathered column at a time).
    const uint64_t sites = mac_site_count(d.R, p.chunk);
    const Reducer sum(p, true, d.R), products(p, false, d.R);
    const DrawKey k_gg = nn_stage_key(key, layer_norm_stage::kGammaSum);
    const DrawKey k_gb = nn_stage_key(key, layer_norm_stage::kBetaSum);
    parallel_for(d.D, threads_, 1, [&](int64_t c0, int64_t c1) {
      std::vector<float> g(static_cast<size_t>(d.R)), h(ggamma ? g.size() : 0);
      for (int64_t c = c0; c < c1; ++c) {
        const uint64_t uc = static_cast<uint64_t>(c);
        for (int64_t r = 0; r < d.R; ++r) g[r] = gp[r * d.D + c];
        if (ggamma) {
          for (int64_t r = 0; r < d.R; ++r) h[r] = hp[r * d.D + c];
          ggamma->data()[c] = steps.gamma_grad(products.run(g.data(), h.data(), d.R, k_gg, uc, sites), uc);
        }
        if (gbeta) gbeta->data()[c] = steps.beta_grad(sum.run(g.data(), nullptr, d.R, k_gb, uc, sites), uc);
      }
    });
  }
  if (!gx) return;

  const std::vector<float> ga = gamma ? gamma->to_vector() : std::vector<float>();
  const std::vector<float> inv = invstd.to_vector();
  const uint64_t sites = mac_site_count(d.D, p.chunk);
  const Reducer sum(p, true, d.D), products(p, false, d.D);
  const DrawKey k_sg = nn_stage_key(key, layer_norm_stage::kRowSum);
  const DrawKey k_sgx = nn_stage_key(key, layer_norm_stage::kRowDot);
  float* xp = gx->data();
  parallel_for(d.R, threads_, row_grain(d.D), [&](int64_t r0, int64_t r1) {
    std::vector<float> gh(static_cast<size_t>(d.D));
    for (int64_t r = r0; r < r1; ++r) {
      const uint64_t ur = static_cast<uint64_t>(r);
      const float* gr = gp + r * d.D;
      const float* hr = hp + r * d.D;
      if (gamma) {
        for (int64_t k = 0; k < d.D; ++k)
          gh[k] = steps.scaled_grad(gr[k], ga[k], static_cast<uint64_t>(r * d.D + k));
      } else {
        std::copy_n(gr, d.D, gh.data());
      }
      const float mg = steps.row_mean_grad(sum.run(gh.data(), nullptr, d.D, k_sg, ur, sites), d.D, ur);
      const float mgx = steps.row_mean_dot(products.run(gh.data(), hr, d.D, k_sgx, ur, sites), d.D, ur);
      float* out_r = xp + r * d.D;
      for (int64_t k = 0; k < d.D; ++k)
        out_r[k] = steps.input_grad(gh[k], hr[k], mg, mgx, inv[r], static_cast<uint64_t>(r * d.D + k));
    }
  });
}

}  // namespace emu
