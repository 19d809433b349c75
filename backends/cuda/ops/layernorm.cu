// Layer normalisation on the device (EMU_OPS_LAYERNORM, core/backend_ops_attention.h),
// with the steps of numerics/layernorm_steps.h and the row reductions of
// numerics/row_reduce.h, the CPU's definitions (backends/cpu/layernorm_ops.cpp).
//
// Each reduction is one dependent chain on one thread, its terms in ascending
// order (that order is the reduction's definition, numerics/mac.h): a row
// statistic on the thread of its row (over the features), a parameter gradient
// on the thread of its feature (over the rows; neighbouring threads read
// neighbouring features of a row). The element-wise steps between the
// reductions run one thread per element. Every rounding draws at the CPU's index
// (element r*D + k, row statistic r, feature k; a reduction at
// output * mac_site_count(K, chunk) + its site), so the bits are the CPU's.
//
// Latency: the parameter gradients are D chains of R terms (R = batch x
// sequence rows), so with few features and many rows that kernel is bound by
// one thread's dependent chain, as batch norm's statistics are; the row
// statistics are R chains of D terms and fill the GPU whenever R is large.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/device_lut.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/scratch.h"
#include "core/layernorm_checks.h"
#include "numerics/layernorm_steps.h"
#include "numerics/row_reduce.h"
#include "numerics/stage_round.h"

namespace emu::EMU_CUDA_NS {
namespace {

using namespace layer_norm_stage;  // NOLINT: the stage numbers of numerics/layernorm_steps.h

// --- forward ---------------------------------------------------------------

// Row r: mean[r] = R(sum1 / D), sum1 = sum_k x[r, k] (stage kSum).
__global__ void ln_mean_kernel(MacRounding sum, bool native, LayerNormForwardSteps steps, const float* x,
                               const float* ones, float* mean, int64_t R, int64_t D, int chunk, DrawKey key) {
  EMU_GRID_STRIDE_LOOP(r, R) {
    const double s = row_sum(sum, native, x + r * D, ones, D, row_draws(key, kSum, r, D, chunk));
    mean[r] = steps.row_mean(s, D, static_cast<uint64_t>(r));
  }
}

// Per element: dev = R(x - mean) (the deviation; xhat's memory holds it until
// the last kernel normalises it in place).
__global__ void ln_deviation_kernel(LayerNormForwardSteps steps, const float* x, const float* mean,
                                    float* dev, int64_t n, int64_t D) {
  EMU_GRID_STRIDE_LOOP(i, n) { dev[i] = steps.deviation(x[i], mean[i / D], static_cast<uint64_t>(i)); }
}

// Row r: invstd[r] from sum2 = sum_k dev_k dev_k under p.mul (stage kSquares).
__global__ void ln_invstd_kernel(MacRounding squares, bool native, LayerNormForwardSteps steps,
                                 const float* dev, float* invstd, float eps, int64_t R, int64_t D, int chunk,
                                 DrawKey key) {
  EMU_GRID_STRIDE_LOOP(r, R) {
    const float* dr = dev + r * D;
    const double s = row_dot(squares, native, dr, dr, D, row_draws(key, kSquares, r, D, chunk));
    invstd[r] = steps.row_invstd(s, D, eps, static_cast<uint64_t>(r));
  }
}

// Per element: xhat = R(dev * invstd) in place, y = R(R(xhat * gamma) + beta).
__global__ void ln_output_kernel(LayerNormForwardSteps steps, float* xhat, const float* invstd,
                                 const float* gamma, const float* beta, float* y, int64_t n, int64_t D) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const uint64_t ui = static_cast<uint64_t>(i);
    const float h = steps.normalized(xhat[i], invstd[i / D], ui);
    xhat[i] = h;
    y[i] = steps.affine(h, gamma, beta, i % D, ui);
  }
}

// --- backward --------------------------------------------------------------

// Feature c: ggamma[c] = R(sum over rows r ascending of gy[r, c] xhat[r, c]) (stage
// kGammaSum), gbeta[c] = R(sum over rows of gy[r, c]) (kBetaSum); either may be null.
__global__ void ln_param_grad_kernel(MacRounding dot, bool native_dot, MacRounding sum, bool native_sum,
                                     LayerNormBackwardSteps steps, const float* gy, const float* xhat,
                                     float* ggamma, float* gbeta, int64_t R, int64_t D, int chunk,
                                     DrawKey key) {
  EMU_GRID_STRIDE_LOOP(c, D) {
    const uint64_t uc = static_cast<uint64_t>(c);
    if (ggamma) {
      auto terms = [&](int64_t r, float* a, float* b) {
        *a = gy[r * D + c];
        *b = xhat[r * D + c];
      };
      ggamma[c] = steps.gamma_grad(
          reduce_terms(dot, native_dot, R, terms, row_draws(key, kGammaSum, c, R, chunk)), uc);
    }
    if (gbeta) {
      auto terms = [&](int64_t r, float* a, float* b) {
        *a = gy[r * D + c];
        *b = 1.0f;
      };
      gbeta[c] =
          steps.beta_grad(reduce_terms(sum, native_sum, R, terms, row_draws(key, kBetaSum, c, R, chunk)), uc);
    }
  }
}

// Per element: gh = R(gy * gamma) (run only with gamma; without it gh is gy).
__global__ void ln_scaled_grad_kernel(LayerNormBackwardSteps steps, const float* gy, const float* gamma,
                                      float* gh, int64_t n, int64_t D) {
  EMU_GRID_STRIDE_LOOP(i, n) { gh[i] = steps.scaled_grad(gy[i], gamma[i % D], static_cast<uint64_t>(i)); }
}

// Row r: mg[r] = R(sum_k gh_k / D) (stage kRowSum), mgx[r] = R(sum_k gh_k xhat_k / D) (kRowDot).
__global__ void ln_row_grad_kernel(MacRounding sum, bool native_sum, MacRounding dot, bool native_dot,
                                   LayerNormBackwardSteps steps, const float* gh, const float* xhat,
                                   const float* ones, float* mg, float* mgx, int64_t R, int64_t D, int chunk,
                                   DrawKey key) {
  EMU_GRID_STRIDE_LOOP(r, R) {
    const uint64_t ur = static_cast<uint64_t>(r);
    const float* gr = gh + r * D;
    mg[r] = steps.row_mean_grad(row_sum(sum, native_sum, gr, ones, D, row_draws(key, kRowSum, r, D, chunk)),
                                D, ur);
    mgx[r] = steps.row_mean_dot(
        row_dot(dot, native_dot, gr, xhat + r * D, D, row_draws(key, kRowDot, r, D, chunk)), D, ur);
  }
}

// Per element: gx = R(R(R(gh - mg) - R(xhat * mgx)) * invstd).
__global__ void ln_input_grad_kernel(LayerNormBackwardSteps steps, const float* gh, const float* xhat,
                                     const float* mg, const float* mgx, const float* invstd, float* gx,
                                     int64_t n, int64_t D) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t r = i / D;
    gx[i] = steps.input_grad(gh[i], xhat[i], mg[r], mgx[r], invstd[r], static_cast<uint64_t>(i));
  }
}

// A contiguous device copy of an optional vector and its pointer (null when absent).
struct Optional {
  Tensor t;
  const float* data = nullptr;
  Optional(const Tensor* v, const char* what) {
    if (!v) return;
    t = v->contiguous();
    data = contiguous_data(t, what);
  }
};

}  // namespace

// x (R,D), gamma, beta (D) or null -> y, xhat (R,D), invstd (R)
void CudaBackend::layer_norm_forward(const MacPolicy& p, float eps, const Tensor& x, const Tensor* gamma,
                                     const Tensor* beta, Tensor& y, Tensor& xhat, Tensor& invstd,
                                     DrawKey key) {
  OpScope scope("layer_norm_forward");
  const LayerNormRows d = check_layer_norm_forward(x, gamma, beta, y, xhat, invstd);
  if (d.R == 0 || d.D == 0) return;
  const Tensor xc = x.contiguous();
  const Optional ga(gamma, "gamma"), be(beta, "beta");
  const float* xp = contiguous_data(xc, "x");
  float* yp = contiguous_data(y, "y");
  float* hp = contiguous_data(xhat, "xhat");
  float* ip = contiguous_data(invstd, "invstd");
  const int64_t n = d.R * d.D;
  const LayerNormForwardSteps steps(p.out, key.seed, key.stream);
  const Tensor ones = Tensor::full({d.D}, 1.0f, Device::Cuda);
  DeviceArray<float> mean(static_cast<size_t>(d.R));
  launch_each("ln_mean_kernel", ln_mean_kernel, d.R, MacRounding(layer_norm_sum_policy(p)),
              layer_norm_native_sum(p), steps, xp, static_cast<const float*>(contiguous_data(ones, "ones")),
              mean.get(), d.R, d.D, p.chunk, key);
  launch_each("ln_deviation_kernel", ln_deviation_kernel, n, steps, xp, static_cast<const float*>(mean.get()),
              hp, n, d.D);
  launch_each("ln_invstd_kernel", ln_invstd_kernel, d.R,
              MacRounding(with_device_lut(layer_norm_dot_policy(p))), layer_norm_native_dot(p), steps,
              static_cast<const float*>(hp), ip, eps, d.R, d.D, p.chunk, key);
  launch_each("ln_output_kernel", ln_output_kernel, n, steps, hp, static_cast<const float*>(ip), ga.data,
              be.data, yp, n, d.D);
}

// gy, xhat (R,D), invstd (R), gamma (D) or null -> gx (R,D), ggamma, gbeta (D), each optional
void CudaBackend::layer_norm_backward(const MacPolicy& p, const Tensor& gy, const Tensor& xhat,
                                      const Tensor& invstd, const Tensor* gamma, Tensor* gx, Tensor* ggamma,
                                      Tensor* gbeta, DrawKey key) {
  OpScope scope("layer_norm_backward");
  const LayerNormRows d = check_layer_norm_backward(gy, xhat, invstd, gamma, gx, ggamma, gbeta);
  if (d.R == 0 || d.D == 0) {
    if (ggamma) ggamma->fill(0.0f);
    if (gbeta) gbeta->fill(0.0f);
    return;
  }
  const Tensor gc = gy.contiguous(), hc = xhat.contiguous();
  const float* gp = contiguous_data(gc, "gy");
  const float* hp = contiguous_data(hc, "xhat");
  const LayerNormBackwardSteps steps(p.out, key.seed, key.stream);
  const MacRounding sum(layer_norm_sum_policy(p)), dot(with_device_lut(layer_norm_dot_policy(p)));
  const bool native_sum = layer_norm_native_sum(p), native_dot = layer_norm_native_dot(p);

  if (ggamma || gbeta)
    launch_each("ln_param_grad_kernel", ln_param_grad_kernel, d.D, dot, native_dot, sum, native_sum, steps,
                gp, hp, ggamma ? contiguous_data(*ggamma, "ggamma") : nullptr,
                gbeta ? contiguous_data(*gbeta, "gbeta") : nullptr, d.R, d.D, p.chunk, key);
  if (!gx) return;

  const int64_t n = d.R * d.D;
  const Tensor ic = invstd.contiguous();
  const Optional ga(gamma, "gamma");
  const Tensor ones = Tensor::full({d.D}, 1.0f, Device::Cuda);
  DeviceArray<float> scaled(gamma ? static_cast<size_t>(n) : 0), mg(static_cast<size_t>(d.R)),
      mgx(static_cast<size_t>(d.R));
  const float* ghp = gp;
  if (gamma) {
    launch_each("ln_scaled_grad_kernel", ln_scaled_grad_kernel, n, steps, gp, ga.data, scaled.get(), n, d.D);
    ghp = scaled.get();
  }
  launch_each("ln_row_grad_kernel", ln_row_grad_kernel, d.R, sum, native_sum, dot, native_dot, steps, ghp, hp,
              static_cast<const float*>(contiguous_data(ones, "ones")), mg.get(), mgx.get(), d.R, d.D,
              p.chunk, key);
  launch_each("ln_input_grad_kernel", ln_input_grad_kernel, n, steps, ghp, hp,
              static_cast<const float*>(mg.get()), static_cast<const float*>(mgx.get()),
              static_cast<const float*>(contiguous_data(ic, "invstd")), contiguous_data(*gx, "gx"), n, d.D);
}

}  // namespace emu::EMU_CUDA_NS
