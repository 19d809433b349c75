// layer_norm_forward and layer_norm_backward on the CPU. Every rounding and its
// stage is listed in core/backend_ops_attention.h; docs/layers_attention.md says
// why. Rows are independent, so the forward and the row part of the backward
// run one block of rows per thread; the per-feature sums of the parameter
// gradients run one block of features per thread. Plain fp32 formats use
// binary32 operations, which are exactly those roundings (reduce_arith.h).
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/op_checks.h"
#include "backends/cpu/reduce_arith.h"
#include "numerics/functions.h"

namespace emu {
namespace {

using namespace cpu_reduce;  // NOLINT: the shared helpers of reduce_arith.h
using cpu_checks::check_result;
using cpu_checks::check_shape;

constexpr int64_t kRowGrainElements = int64_t{1} << 13;

struct Rows {
  int64_t R, D;
};

Rows rows_of(const char* op, const char* what, const Tensor& t) {
  if (t.ndim() != 2)
    throw std::invalid_argument(
        fmt::format("{}: {} must be (rows, D), got {}", op, what, shape_string(t.shape())));
  return Rows{t.dim(0), t.dim(1)};
}

int64_t row_grain(int64_t D) { return std::max<int64_t>(1, kRowGrainElements / std::max<int64_t>(1, D)); }

}  // namespace

// x (R,D), gamma, beta (D) or null -> y, xhat (R,D), invstd (R)
void CpuBackend::layer_norm_forward(const MacPolicy& p, float eps, const Tensor& x, const Tensor* gamma,
                                    const Tensor* beta, Tensor& y, Tensor& xhat, Tensor& invstd,
                                    DrawKey key) {
  const char* op = "layer_norm_forward";
  const Rows d = rows_of(op, "x", x);
  if (gamma) check_shape(op, "gamma", *gamma, {d.D});
  if (beta) check_shape(op, "beta", *beta, {d.D});
  check_result(op, "y", y, x.shape());
  check_result(op, "xhat", xhat, x.shape());
  check_result(op, "invstd", invstd, {d.R});
  if (d.R == 0 || d.D == 0) return;
  const Tensor X = x.contiguous();
  const std::vector<float> ga = gamma ? gamma->to_vector() : std::vector<float>();
  const std::vector<float> be = beta ? beta->to_vector() : std::vector<float>();
  const uint64_t sites = mac_site_count(d.D, p.chunk);
  const Reducer sum(p, true, d.D), squares(p, false, d.D);
  const Format& out = p.out;
  const DrawKey k_sum = nn_stage_key(key, 0), k_sq = nn_stage_key(key, 3);
  const Rounder r_mean(out, nn_stage_key(key, 1)), r_dev(out, nn_stage_key(key, 2));
  const Rounder r_var(out, nn_stage_key(key, 4)), r_ve(out, nn_stage_key(key, 5));
  const Rounder r_inv(out, nn_stage_key(key, 6)), r_hat(out, nn_stage_key(key, 7));
  const Rounder r_scale(out, nn_stage_key(key, 8)), r_shift(out, nn_stage_key(key, 9));
  const float* xp = X.data();
  float* yp = y.data();
  float* hp = xhat.data();
  float* ip = invstd.data();
  const double D = static_cast<double>(d.D);
  parallel_for(d.R, threads_, row_grain(d.D), [&](int64_t r0, int64_t r1) {
    std::vector<float> dev(static_cast<size_t>(d.D));
    for (int64_t r = r0; r < r1; ++r) {
      const uint64_t ur = static_cast<uint64_t>(r);
      const float* xr = xp + r * d.D;
      const float mean = r_mean.div(sum.run(xr, nullptr, d.D, k_sum, ur, sites), D, ur);
      for (int64_t k = 0; k < d.D; ++k) dev[k] = r_dev.sub(xr[k], mean, static_cast<uint64_t>(r * d.D + k));
      const float var = r_var.div(squares.run(dev.data(), dev.data(), d.D, k_sq, ur, sites), D, ur);
      const float inv = r_inv.round(fn_rsqrt(r_ve.add(var, eps, ur)), ur);
      ip[r] = inv;
      float* hr = hp + r * d.D;
      float* yr = yp + r * d.D;
      for (int64_t k = 0; k < d.D; ++k) {
        const uint64_t ui = static_cast<uint64_t>(r * d.D + k);
        const float h = r_hat.mul(dev[k], inv, ui);
        float v = h;
        if (gamma) v = r_scale.mul(v, ga[k], ui);
        if (beta) v = r_shift.add(v, be[k], ui);
        hr[k] = h;
        yr[k] = v;
      }
    }
  });
}

// gy, xhat (R,D), invstd (R), gamma (D) or null -> gx (R,D), ggamma, gbeta (D), each optional
void CpuBackend::layer_norm_backward(const MacPolicy& p, const Tensor& gy, const Tensor& xhat,
                                     const Tensor& invstd, const Tensor* gamma, Tensor* gx, Tensor* ggamma,
                                     Tensor* gbeta, DrawKey key) {
  const char* op = "layer_norm_backward";
  const Rows d = rows_of(op, "gy", gy);
  check_shape(op, "xhat", xhat, gy.shape());
  check_shape(op, "invstd", invstd, {d.R});
  if (gamma) check_shape(op, "gamma", *gamma, {d.D});
  if (gx) check_result(op, "gx", *gx, gy.shape());
  if (ggamma) check_result(op, "ggamma", *ggamma, {d.D});
  if (gbeta) check_result(op, "gbeta", *gbeta, {d.D});
  if (d.R == 0 || d.D == 0) {
    if (ggamma) ggamma->fill(0.0f);
    if (gbeta) gbeta->fill(0.0f);
    return;
  }
  const Tensor G = gy.contiguous(), H = xhat.contiguous();
  const float* gp = G.data();
  const float* hp = H.data();
  const Format& out = p.out;

  if (ggamma || gbeta) {
    // Per feature: reductions over the rows, ascending (one gathered column at a time).
    const uint64_t sites = mac_site_count(d.R, p.chunk);
    const Reducer sum(p, true, d.R), products(p, false, d.R);
    const DrawKey k_gg = nn_stage_key(key, 9), k_gb = nn_stage_key(key, 10);
    const Rounder r_gg(out, nn_stage_key(key, 11)), r_gb(out, nn_stage_key(key, 12));
    parallel_for(d.D, threads_, 1, [&](int64_t c0, int64_t c1) {
      std::vector<float> g(static_cast<size_t>(d.R)), h(ggamma ? g.size() : 0);
      for (int64_t c = c0; c < c1; ++c) {
        const uint64_t uc = static_cast<uint64_t>(c);
        for (int64_t r = 0; r < d.R; ++r) g[r] = gp[r * d.D + c];
        if (ggamma) {
          for (int64_t r = 0; r < d.R; ++r) h[r] = hp[r * d.D + c];
          ggamma->data()[c] = r_gg.round(products.run(g.data(), h.data(), d.R, k_gg, uc, sites), uc);
        }
        if (gbeta) gbeta->data()[c] = r_gb.round(sum.run(g.data(), nullptr, d.R, k_gb, uc, sites), uc);
      }
    });
  }
  if (!gx) return;

  const std::vector<float> ga = gamma ? gamma->to_vector() : std::vector<float>();
  const std::vector<float> inv = invstd.to_vector();
  const uint64_t sites = mac_site_count(d.D, p.chunk);
  const Reducer sum(p, true, d.D), products(p, false, d.D);
  const DrawKey k_sg = nn_stage_key(key, 1), k_sgx = nn_stage_key(key, 2);
  const Rounder r_gh(out, nn_stage_key(key, 0)), r_mg(out, nn_stage_key(key, 3)),
      r_mgx(out, nn_stage_key(key, 4));
  const Rounder r_t(out, nn_stage_key(key, 5)), r_u(out, nn_stage_key(key, 6)),
      r_v(out, nn_stage_key(key, 7));
  const Rounder r_gx(out, nn_stage_key(key, 8));
  float* xp = gx->data();
  const double D = static_cast<double>(d.D);
  parallel_for(d.R, threads_, row_grain(d.D), [&](int64_t r0, int64_t r1) {
    std::vector<float> gh(static_cast<size_t>(d.D));
    for (int64_t r = r0; r < r1; ++r) {
      const uint64_t ur = static_cast<uint64_t>(r);
      const float* gr = gp + r * d.D;
      const float* hr = hp + r * d.D;
      if (gamma) {
        for (int64_t k = 0; k < d.D; ++k) gh[k] = r_gh.mul(gr[k], ga[k], static_cast<uint64_t>(r * d.D + k));
      } else {
        std::copy_n(gr, d.D, gh.data());
      }
      const float mg = r_mg.div(sum.run(gh.data(), nullptr, d.D, k_sg, ur, sites), D, ur);
      const float mgx = r_mgx.div(products.run(gh.data(), hr, d.D, k_sgx, ur, sites), D, ur);
      float* out_r = xp + r * d.D;
      for (int64_t k = 0; k < d.D; ++k) {
        const uint64_t ui = static_cast<uint64_t>(r * d.D + k);
        const float v = r_v.sub(r_t.sub(gh[k], mg, ui), r_u.mul(hr[k], mgx, ui), ui);
        out_r[k] = r_gx.mul(v, inv[r], ui);
      }
    }
  });
}

}  // namespace emu
