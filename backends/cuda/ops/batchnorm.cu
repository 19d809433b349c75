// Batch normalisation on the device (EMU_OPS_BATCHNORM, core/backend_ops_nn.h),
// with the steps of numerics/norm_steps.h and the reductions of
// numerics/norm_chunks.h, the CPU's definitions (backends/cpu/norm_ops.cpp).
//
// The element-wise steps run one thread per element, the per-channel steps one
// thread per channel, each rounding drawing at the CPU's index (element
// (n*C + c)*S + s, channel c, a reduction of channel c at c * mac_site_count(M,
// chunk) + site) on its stage's stream. A channel statistic is a reduction over
// its M = N*S values in (n, s) order, split as numerics/norm_chunks.h says:
// one piece per chunk of the policy (all pieces of all channels in parallel),
// then one thread per channel adds the pieces in order in acc_outer. Without a
// chunk there is one piece per channel, a single dependent chain of M roundings:
// see stats_pieces_kernel for what that costs. No atomics: every piece, every
// channel and every element is written by its own thread.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/device_lut.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/scratch.h"
#include "core/batchnorm_checks.h"
#include "numerics/norm_chunks.h"
#include "numerics/norm_steps.h"
#include "numerics/row_reduce.h"

namespace emu::EMU_CUDA_NS {
namespace {

namespace st = batch_norm_stage;

struct Ncs {
  int64_t N, C, S;
  EMU_HD int64_t M() const { return N * S; }
  // Term k = n*S + s of channel c's reduction: element (n*C + c)*S + s.
  EMU_HD int64_t element(int64_t c, int64_t k) const { return (k / S * C + c) * S + k % S; }
};

// The draws of channel c's reduction at stage `stage`.
EMU_HD RowDraws channel_draws(DrawKey key, uint32_t stage, int64_t c, uint64_t sites) {
  return RowDraws{key.seed, key.stream + stage, static_cast<uint64_t>(c) * sites};
}

// Piece j of channel c's reduction of `a` (or of a*a with `square`), thread t = c*runs + j.
//
// Latency: without a chunk in the policy (runs = 1) a channel's statistic is one
// dependent chain of M = N*S emulated additions (and products) on one thread,
// because ascending (n, s) order is the sum's definition (docs/contract.md
// section 4): the kernel has only C threads and takes M times the latency of
// one rounding, whatever the GPU (ResNet-18 at batch 128: C = 64, M = 128*32*32
// = 131072 dependent steps per thread, with 64 of the GPU's thousands of lanes
// busy). A policy with `chunk: K` makes each run of K terms an independent
// piece, so C * ceil(M/K) threads run in parallel and the per-channel
// combination is a chain of only ceil(M/K) promotions: that is why a chunked
// policy is faster on a GPU. (The CPU runs the same single chain per channel,
// but a CPU core runs a long dependent chain at full speed; a GPU lane does not.)
__global__ void stats_pieces_kernel(ChunkedReduce r, bool square, const float* a, double* pieces, Ncs d,
                                    int64_t runs, uint64_t sites, DrawKey key, uint32_t stage) {
  const int64_t n = d.C * runs, M = d.M();
  EMU_GRID_STRIDE_LOOP(t, n) {
    const int64_t c = t / runs;
    pieces[t] = r.run(
        t % runs, M,
        [&](int64_t k, float* x, float* y) {
          *x = a[d.element(c, k)];
          *y = square ? *x : 1.0f;
        },
        channel_draws(key, stage, c, sites));
  }
}

// Two reductions of channel c at once (the backward's sum of gy and sum of gy*xhat): their pieces.
__global__ void grad_pieces_kernel(ChunkedReduce sum, ChunkedReduce dot, const float* gy, const float* xhat,
                                   double* sg, double* sgx, Ncs d, int64_t runs, uint64_t sites,
                                   DrawKey key) {
  const int64_t n = d.C * runs, M = d.M();
  EMU_GRID_STRIDE_LOOP(t, n) {
    const int64_t c = t / runs, j = t % runs;
    sg[t] = sum.run(
        j, M,
        [&](int64_t k, float* x, float* y) {
          *x = gy[d.element(c, k)];
          *y = 1.0f;
        },
        channel_draws(key, st::kGradSum, c, sites));
    sgx[t] = dot.run(
        j, M,
        [&](int64_t k, float* x, float* y) {
          const int64_t e = d.element(c, k);
          *x = gy[e];
          *y = xhat[e];
        },
        channel_draws(key, st::kGradDot, c, sites));
  }
}

// mean[c] = R(sum1 / M) from channel c's pieces; one thread per channel.
__global__ void mean_kernel(MacPolicy sum, BatchNormStatsSteps steps, const double* pieces, float* mean,
                            Ncs d, int64_t runs, uint64_t sites, DrawKey key) {
  EMU_GRID_STRIDE_LOOP(c, d.C) {
    const double s1 = combine_runs(sum, pieces + c * runs, d.M(), channel_draws(key, st::kSum, c, sites));
    mean[c] = steps.channel_mean(s1, d.M(), static_cast<uint64_t>(c));
  }
}

// dev[i] = R(x[i] - mean[c]); one thread per element.
__global__ void deviation_kernel(BatchNormStatsSteps steps, const float* x, const float* mean, float* dev,
                                 Ncs d) {
  const int64_t n = d.N * d.C * d.S;
  EMU_GRID_STRIDE_LOOP(i, n) {
    dev[i] = steps.deviation(x[i], mean[i / d.S % d.C], static_cast<uint64_t>(i));
  }
}

// var[c] = R(sum2 / M), var_unbiased[c] = R(sum2 / (M - 1)) from channel c's pieces; one thread per channel.
__global__ void var_kernel(MacPolicy squares, BatchNormStatsSteps steps, const double* pieces, float* var,
                           float* var_unbiased, Ncs d, int64_t runs, uint64_t sites, DrawKey key) {
  EMU_GRID_STRIDE_LOOP(c, d.C) {
    const double s2 =
        combine_runs(squares, pieces + c * runs, d.M(), channel_draws(key, st::kSquares, c, sites));
    var[c] = steps.channel_var(s2, d.M(), static_cast<uint64_t>(c));
    var_unbiased[c] = steps.channel_var_unbiased(s2, d.M(), static_cast<uint64_t>(c));
  }
}

// invstd[c] = R(rsqrt(R(var[c] + eps))); one thread per channel.
__global__ void invstd_kernel(BatchNormNormalizeSteps steps, float eps, const float* var, float* invstd,
                              int64_t C) {
  EMU_GRID_STRIDE_LOOP(c, C) { invstd[c] = steps.channel_invstd(var[c], eps, static_cast<uint64_t>(c)); }
}

// xhat = R(R(x - mean) * invstd), y = R(R(xhat * gamma) + beta); one thread per element.
__global__ void normalize_kernel(BatchNormNormalizeSteps steps, const float* x, const float* mean,
                                 const float* invstd, const float* gamma, const float* beta, float* y,
                                 float* xhat, Ncs d) {
  const int64_t n = d.N * d.C * d.S;
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t c = i / d.S % d.C;
    const uint64_t ui = static_cast<uint64_t>(i);
    const float h = steps.normalized(x[i], mean[c], invstd[c], ui);
    const float v = steps.affine(h, gamma, beta, c, ui);
    xhat[i] = h;
    y[i] = v;
  }
}

// running_mean[c] and running_var[c] updated in place; one thread per channel.
__global__ void running_kernel(BatchNormRunningSteps mean_steps, BatchNormRunningSteps var_steps,
                               float momentum, float keep, const float* mean, const float* var_unbiased,
                               float* running_mean, float* running_var, int64_t C) {
  EMU_GRID_STRIDE_LOOP(c, C) {
    const uint64_t uc = static_cast<uint64_t>(c);
    running_mean[c] = mean_steps.updated(momentum, keep, mean[c], running_mean[c], uc);
    running_var[c] = var_steps.updated(momentum, keep, var_unbiased[c], running_var[c], uc);
  }
}

// Per channel c: gbeta, ggamma (when asked for), and the gx factors k, mg, mgx (scale[3c .. 3c+2]);
// sums (sg, sgx pieces) null when no result needs them. One thread per channel.
__global__ void grad_channel_kernel(MacPolicy sum, MacPolicy dot, BatchNormBackwardSteps steps,
                                    bool batch_stats, const double* sg, const double* sgx,
                                    const float* invstd, const float* gamma, float* gbeta, float* ggamma,
                                    float* scale, Ncs d, int64_t runs, uint64_t sites, DrawKey key) {
  EMU_GRID_STRIDE_LOOP(c, d.C) {
    const uint64_t uc = static_cast<uint64_t>(c);
    const int64_t M = d.M();
    double s = 0, sx = 0;
    if (sg) {
      s = combine_runs(sum, sg + c * runs, M, channel_draws(key, st::kGradSum, c, sites));
      sx = combine_runs(dot, sgx + c * runs, M, channel_draws(key, st::kGradDot, c, sites));
    }
    if (gbeta) gbeta[c] = steps.beta_grad(s, uc);
    if (ggamma) ggamma[c] = steps.gamma_grad(sx, uc);
    if (!scale) continue;
    scale[3 * c] = steps.scale(gamma, invstd[c], c);
    scale[3 * c + 1] = batch_stats ? steps.mean_grad(s, M, uc) : 0.0f;
    scale[3 * c + 2] = batch_stats ? steps.mean_dot(sx, M, uc) : 0.0f;
  }
}

// gx from gy, xhat and the channel's k, mg, mgx; one thread per element.
__global__ void grad_input_kernel(BatchNormBackwardSteps steps, bool batch_stats, const float* gy,
                                  const float* xhat, const float* scale, float* gx, Ncs d) {
  const int64_t n = d.N * d.C * d.S;
  EMU_GRID_STRIDE_LOOP(i, n) {
    const float* f = scale + 3 * (i / d.S % d.C);
    const uint64_t ui = static_cast<uint64_t>(i);
    gx[i] = batch_stats ? steps.input_grad(gy[i], xhat[i], f[1], f[2], f[0], ui)
                        : steps.input_grad_running(gy[i], f[0], ui);
  }
}

// The kernels' view of a shape checked by core/batchnorm_checks.h.
Ncs ncs(const BatchNormShape& s) { return Ncs{s.N, s.C, s.S}; }

// A contiguous device copy of an optional (C) input, or null.
const float* optional_data(const Tensor* t, Tensor& keep, const char* what) {
  if (!t) return nullptr;
  keep = t->contiguous();
  return contiguous_data(keep, what);
}

}  // namespace

// x (N,C,S) -> mean, var, var_unbiased (C)
void CudaBackend::batch_norm_stats(const MacPolicy& p, const Tensor& x, Tensor& mean, Tensor& var,
                                   Tensor& var_unbiased, DrawKey key) {
  OpScope scope("batch_norm_stats");
  const Ncs d = ncs(check_batch_norm_stats(x, mean, var, var_unbiased));
  if (d.C == 0) return;
  const Tensor xc = x.contiguous();
  const float* xp = d.M() ? contiguous_data(xc, "x") : nullptr;
  const int64_t M = d.M(), runs = chunk_runs(M, p.chunk), pieces = d.C * runs;
  const uint64_t sites = mac_site_count(M, p.chunk);
  const MacPolicy sum = batch_norm_sum_policy(p), squares = with_device_lut(batch_norm_dot_policy(p));
  const BatchNormStatsSteps steps(p.out, key.seed, key.stream);
  float* mp = contiguous_data(mean, "mean");
  DeviceArray<double> part(static_cast<size_t>(pieces));
  DeviceArray<float> dev(static_cast<size_t>(d.N * d.C * d.S));
  launch_each("stats_pieces_kernel", stats_pieces_kernel, pieces, ChunkedReduce(sum, true), false, xp,
              part.get(), d, runs, sites, key, st::kSum);
  launch_each("mean_kernel", mean_kernel, d.C, sum, steps, static_cast<const double*>(part.get()), mp, d,
              runs, sites, key);
  launch_each("deviation_kernel", deviation_kernel, d.N * d.C * d.S, steps, xp, static_cast<const float*>(mp),
              dev.get(), d);
  launch_each("stats_pieces_kernel", stats_pieces_kernel, pieces, ChunkedReduce(squares, false), true,
              static_cast<const float*>(dev.get()), part.get(), d, runs, sites, key, st::kSquares);
  launch_each("var_kernel", var_kernel, d.C, squares, steps, static_cast<const double*>(part.get()),
              contiguous_data(var, "var"), contiguous_data(var_unbiased, "var_unbiased"), d, runs, sites,
              key);
}

// x (N,C,S), mean, var (C), gamma, beta (C) or null -> y, xhat (N,C,S), invstd (C)
void CudaBackend::batch_norm_normalize(const Format& out, float eps, const Tensor& x, const Tensor& mean,
                                       const Tensor& var, const Tensor* gamma, const Tensor* beta, Tensor& y,
                                       Tensor& xhat, Tensor& invstd, DrawKey key) {
  OpScope scope("batch_norm_normalize");
  const Ncs d = ncs(check_batch_norm_normalize(x, mean, var, gamma, beta, y, xhat, invstd));
  if (d.C == 0) return;
  const Tensor mc = mean.contiguous(), vc = var.contiguous();
  Tensor gc, bc;
  const float* gp = optional_data(gamma, gc, "gamma");
  const float* bp = optional_data(beta, bc, "beta");
  const BatchNormNormalizeSteps steps(out, key.seed, key.stream);
  float* ip = contiguous_data(invstd, "invstd");
  launch_each("invstd_kernel", invstd_kernel, d.C, steps, eps,
              static_cast<const float*>(contiguous_data(vc, "var")), ip, d.C);
  const int64_t n = d.N * d.C * d.S;
  if (n == 0) return;
  const Tensor xc = x.contiguous();
  launch_each("normalize_kernel", normalize_kernel, n, steps,
              static_cast<const float*>(contiguous_data(xc, "x")),
              static_cast<const float*>(contiguous_data(mc, "mean")), static_cast<const float*>(ip), gp, bp,
              contiguous_data(y, "y"), contiguous_data(xhat, "xhat"), d);
}

// mean, var_unbiased (C); running_mean, running_var (C) updated in place
void CudaBackend::batch_norm_update_running(const Format& out, float momentum, const Tensor& mean,
                                            const Tensor& var_unbiased, Tensor& running_mean,
                                            Tensor& running_var, DrawKey key) {
  OpScope scope("batch_norm_update_running");
  const int64_t C = check_batch_norm_update_running(mean, var_unbiased, running_mean, running_var);
  if (C == 0) return;
  // Copies, as the CPU reads them: the running statistics may share storage with them.
  const Tensor mc = mean.clone(), vc = var_unbiased.clone();
  launch_each("running_kernel", running_kernel, C, BatchNormRunningSteps(out, key.seed, key.stream, 0),
              BatchNormRunningSteps(out, key.seed, key.stream, st::kVarRun), momentum,
              batch_norm_keep(momentum), static_cast<const float*>(contiguous_data(mc, "mean")),
              static_cast<const float*>(contiguous_data(vc, "var_unbiased")),
              contiguous_data(running_mean, "running_mean"), contiguous_data(running_var, "running_var"), C);
}

// gy, xhat (N,C,S), invstd (C), gamma (C) or null -> gx (N,C,S), ggamma, gbeta (C), each optional
void CudaBackend::batch_norm_backward(const MacPolicy& p, bool batch_stats, const Tensor& gy,
                                      const Tensor& xhat, const Tensor& invstd, const Tensor* gamma,
                                      Tensor* gx, Tensor* ggamma, Tensor* gbeta, DrawKey key) {
  OpScope scope("batch_norm_backward");
  const Ncs d = ncs(check_batch_norm_backward(gy, xhat, invstd, gamma, gx, ggamma, gbeta));
  if (d.C == 0) return;
  const int64_t M = d.M(), n = d.N * d.C * d.S, runs = chunk_runs(M, p.chunk), pieces = d.C * runs;
  const uint64_t sites = mac_site_count(M, p.chunk);
  const Tensor gc = gy.contiguous(), hc = xhat.contiguous(), ic = invstd.contiguous();
  const float* gp = n ? contiguous_data(gc, "gy") : nullptr;
  const float* hp = n ? contiguous_data(hc, "xhat") : nullptr;
  Tensor gac;
  const float* gamma_p = optional_data(gamma, gac, "gamma");
  const MacPolicy sum = batch_norm_sum_policy(p), dot = with_device_lut(batch_norm_dot_policy(p));
  const BatchNormBackwardSteps steps(p.out, key.seed, key.stream);
  const bool need_sums = ggamma || gbeta || (gx && batch_stats);
  DeviceArray<double> sg(static_cast<size_t>(need_sums ? pieces : 0)),
      sgx(static_cast<size_t>(need_sums ? pieces : 0));
  if (need_sums)
    launch_each("grad_pieces_kernel", grad_pieces_kernel, pieces, ChunkedReduce(sum, true),
                ChunkedReduce(dot, false), gp, hp, sg.get(), sgx.get(), d, runs, sites, key);
  DeviceArray<float> scale(static_cast<size_t>(gx ? 3 * d.C : 0));
  launch_each("grad_channel_kernel", grad_channel_kernel, d.C, sum, dot, steps, batch_stats,
              static_cast<const double*>(need_sums ? sg.get() : nullptr),
              static_cast<const double*>(need_sums ? sgx.get() : nullptr),
              static_cast<const float*>(contiguous_data(ic, "invstd")), gamma_p,
              gbeta ? contiguous_data(*gbeta, "gbeta") : nullptr,
              ggamma ? contiguous_data(*ggamma, "ggamma") : nullptr, gx ? scale.get() : nullptr, d, runs,
              sites, key);
  if (!gx || n == 0) return;
  launch_each("grad_input_kernel", grad_input_kernel, n, steps, batch_stats, gp, hp,
              static_cast<const float*>(scale.get()), contiguous_data(*gx, "gx"), d);
}

}  // namespace emu::EMU_CUDA_NS
