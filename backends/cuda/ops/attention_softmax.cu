// The masked softmax of attention on the device (EMU_OPS_ATTENTION_SOFTMAX,
// core/backend_ops_attention.h): attention_softmax_forward (exact exp),
// attention_softmax_forward_fn (exact or pwl exp) and attention_softmax_backward,
// the CPU's steps (backends/cpu/attention_ops.cpp) through the shared numerics:
// the per-element arithmetic of numerics/element_arith.h, the pwl exp of
// numerics/pwl.h, the row reductions of numerics/row_reduce.h, the mask of
// attention_masked (core/backend_ops_attention.h).
//
// Row r = (n, h, t) of the (N,H,T,S) scores is one softmax over the key
// positions j. A row's maximum and its sum (the backward's dot product) run on
// one thread each, term by term in ascending j: that order is the reduction's
// definition (numerics/mac.h), so it is not split across threads; a masked
// position enters neither (a zero term of the sum). The per-element steps run
// one thread per element. Every rounding draws at the CPU's index (element
// r*S + j at the stage offsets of attention_site, the sum at
// r * mac_site_count(S, chunk) + its site), so the bits are the CPU's.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/device_lut.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/scratch.h"
#include "core/attention_checks.h"
#include "core/backend_ops_attention.h"
#include "numerics/element_arith.h"
#include "numerics/functions.h"
#include "numerics/pwl.h"
#include "numerics/row_reduce.h"

namespace emu::EMU_CUDA_NS {
namespace {

using namespace attention_site;  // NOLINT: the stage offsets of core/backend_ops_attention.h

// Which positions of which rows are masked: row r = (n, h, t) of (N,H,T,S) reads
// row n of the (N,S) key padding mask (or none) and, when causal, hides j > t.
struct MaskShape {
  int64_t H, T, S;
  const float* mask;  // (N, S) contiguous, or null
  bool causal;
  EMU_HD bool masked(int64_t r, int64_t j) const {
    return attention_masked(mask ? mask + (r / (H * T)) * S : nullptr, causal, r % T, j);
  }
};

// Per element: z = R_out(s * scale) (stage kScale) at unmasked positions.
template <class A>
__global__ void scaled_scores_kernel(A arith, float scale, MaskShape sh, const float* s, float* z,
                                     int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    if (sh.masked(i / sh.S, i % sh.S)) continue;
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    z[i] = a.mul(s[i], scale, kScale);
  }
}

// Row r: m[r] = max of z over the unmasked positions, ascending (exact; a NaN
// never wins the comparison; -Inf when every position is masked, never read).
__global__ void masked_max_kernel(MaskShape sh, const float* z, float* m, int64_t rows) {
  EMU_GRID_STRIDE_LOOP(r, rows) {
    float best = bits_float(0xff800000u);  // -Inf
    const float* zr = z + r * sh.S;
    for (int64_t j = 0; j < sh.S; ++j) {
      if (sh.masked(r, j)) continue;
      best = zr[j] > best ? zr[j] : best;
    }
    m[r] = best;
  }
}

// Per element: e = R_out(exp(R_out(z - m))) (stages kSub, kExp; a pwl exp's
// product at kPwlMul) at unmasked positions, +0 (no term of the sum) at masked ones.
template <class A>
__global__ void masked_exp_kernel(A arith, FunctionApprox exp, MaskShape sh, const float* z, const float* m,
                                  float* e, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t r = i / sh.S;
    if (sh.masked(r, i % sh.S)) {
      e[i] = 0.0f;
      continue;
    }
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    const float d = a.sub(z[i], m[r], kSub);
    e[i] = exp.pwl() ? pwl_value(exp, a, d, kExp, kPwlMul) : a.round(fn_exp(d), kExp);
  }
}

// Row r: total[r] = sum_j e_j in acc, ascending (stage kSum).
__global__ void masked_sum_kernel(MacRounding sum, bool native, const float* e, const float* ones,
                                  double* total, int64_t rows, int64_t S, int chunk, DrawKey key) {
  EMU_GRID_STRIDE_LOOP(r, rows) {
    total[r] = row_sum(sum, native, e + r * S, ones, S, row_draws(key, kSum, r, S, chunk));
  }
}

// Per element: probs = R_out(e / total) (stage kResult), the exact quotient; +0 where masked
// (a row with every position masked is all +0).
template <class A>
__global__ void masked_probs_kernel(A arith, MaskShape sh, const float* e, const double* total, float* probs,
                                    int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t r = i / sh.S;
    if (sh.masked(r, i % sh.S)) {
      probs[i] = 0.0f;
      continue;
    }
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    probs[i] = a.div_wide(e[i], total[r], kResult);
  }
}

// Backward, row r: dot[r] = R_out(sum_j gprobs_j probs_j) under p (stage kReduce;
// masked probs are zero terms).
__global__ void masked_dot_kernel(MacRounding dp, bool native, const float* probs, const float* gprobs,
                                  float* dot, int64_t rows, int64_t S, int chunk, DrawKey key) {
  EMU_GRID_STRIDE_LOOP(r, rows) {
    dot[r] = static_cast<float>(
        row_dot(dp, native, gprobs + r * S, probs + r * S, S, row_draws(key, kReduce, r, S, chunk)));
  }
}

// Backward, per element: gs = R(R(probs * R(gprobs - dot)) * scale) (stages kStep1,
// kStep2, kGradScale); +0 where masked.
template <class A>
__global__ void masked_grad_kernel(A arith, float scale, MaskShape sh, const float* probs,
                                   const float* gprobs, const float* dot, float* gs, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t r = i / sh.S;
    if (sh.masked(r, i % sh.S)) {
      gs[i] = 0.0f;
      continue;
    }
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    gs[i] = a.mul(a.mul(probs[i], a.sub(gprobs[i], dot[r], kStep1), kStep2), scale, kGradScale);
  }
}

// --- the checked scores ------------------------------------------------------

// The scores' (N,H,T,S) and the mask's contiguous copy (kept alive by `mask`).
struct Scores {
  int64_t N, H, T, S;
  Tensor mask;
  MaskShape shape(bool causal) const {
    return MaskShape{H, T, S, mask.defined() ? contiguous_data(mask, "key padding mask") : nullptr, causal};
  }
  int64_t rows() const { return N * H * T; }
};

// Checked scores (core/attention_checks.h) and the mask's contiguous copy.
Scores scores_of(const AttentionScores& d, const Tensor* key_padding) {
  return Scores{d.N, d.H, d.T, d.S, key_padding ? key_padding->contiguous() : Tensor()};
}

// The forward's five launches under arithmetic A (Fp32Arith or ElementArith).
template <class A>
void forward(A a, const MacPolicy& p, bool native, const FunctionApprox& exp, float scale,
             const MaskShape& sh, const float* s, float* probs, int64_t rows, DrawKey key) {
  const int64_t S = sh.S, n = rows * S;
  const Tensor ones = Tensor::full({S}, 1.0f, Device::Cuda);
  DeviceArray<float> z(static_cast<size_t>(n)), e(static_cast<size_t>(n)), m(static_cast<size_t>(rows));
  DeviceArray<double> total(static_cast<size_t>(rows));
  launch_each("scaled_scores_kernel", scaled_scores_kernel<A>, n, a, scale, sh, s, z.get(), n);
  launch_each("masked_max_kernel", masked_max_kernel, rows, sh, static_cast<const float*>(z.get()), m.get(),
              rows);
  launch_each("masked_exp_kernel", masked_exp_kernel<A>, n, a, exp, sh, static_cast<const float*>(z.get()),
              static_cast<const float*>(m.get()), e.get(), n);
  launch_each("masked_sum_kernel", masked_sum_kernel, rows, MacRounding(plain_sum_policy(p)), native,
              static_cast<const float*>(e.get()), static_cast<const float*>(contiguous_data(ones, "ones")),
              total.get(), rows, S, p.chunk, key);
  launch_each("masked_probs_kernel", masked_probs_kernel<A>, n, a, sh, static_cast<const float*>(e.get()),
              static_cast<const double*>(total.get()), probs, n);
}

}  // namespace

// s (N,H,T,S), key_padding (N,S) or null -> probs (N,H,T,S)
void CudaBackend::attention_softmax_forward(const MacPolicy& p, float scale, bool causal, const Tensor& s,
                                            const Tensor* key_padding, Tensor& probs, DrawKey key) {
  attention_softmax_forward_fn(p, FunctionApprox{}, scale, causal, s, key_padding, probs, key);
}

// s (N,H,T,S), key_padding (N,S) or null -> probs (N,H,T,S), exp exact or pwl
void CudaBackend::attention_softmax_forward_fn(const MacPolicy& p, const FunctionApprox& exp, float scale,
                                               bool causal, const Tensor& s, const Tensor* key_padding,
                                               Tensor& probs, DrawKey key) {
  OpScope scope("attention_softmax_forward");
  const Scores sc = scores_of(check_attention_softmax_forward(s, key_padding, probs), key_padding);
  if (sc.rows() * sc.S == 0) return;
  const Tensor sc_c = s.contiguous();
  const float* sp = contiguous_data(sc_c, "scores");
  float* yp = contiguous_data(probs, "probs");
  const MaskShape sh = sc.shape(causal);
  const bool native = native_sum(p);
  if (native && is_plain_fp32(p.out))
    forward(Fp32Arith{}, p, true, exp, scale, sh, sp, yp, sc.rows(), key);
  else
    forward(ElementArith(p.out, key.seed, key.stream), p, native, exp, scale, sh, sp, yp, sc.rows(), key);
}

// probs, gprobs (N,H,T,S), key_padding (N,S) or null -> gs (N,H,T,S)
void CudaBackend::attention_softmax_backward(const MacPolicy& p, float scale, bool causal,
                                             const Tensor& probs, const Tensor& gprobs,
                                             const Tensor* key_padding, Tensor& gs, DrawKey key) {
  OpScope scope("attention_softmax_backward");
  const Scores sc = scores_of(check_attention_softmax_backward(probs, gprobs, key_padding, gs), key_padding);
  const int64_t rows = sc.rows(), n = rows * sc.S;
  if (n == 0) return;
  const Tensor yc = probs.contiguous(), gc = gprobs.contiguous();
  const float* yp = contiguous_data(yc, "probs");
  const float* gp = contiguous_data(gc, "gprobs");
  float* out = contiguous_data(gs, "gs");
  const MaskShape sh = sc.shape(causal);
  DeviceArray<float> dot(static_cast<size_t>(rows));
  launch_each("masked_dot_kernel", masked_dot_kernel, rows, MacRounding(with_device_lut(p)), native_dot(p),
              yp, gp, dot.get(), rows, sc.S, p.chunk, key);
  const float* dp = dot.get();
  if (is_plain_fp32(p.out))
    launch_each("masked_grad_kernel", masked_grad_kernel<Fp32Arith>, n, Fp32Arith{}, scale, sh, yp, gp, dp,
                out, n);
  else
    launch_each("masked_grad_kernel", masked_grad_kernel<ElementArith>, n,
                ElementArith(p.out, key.seed, key.stream), scale, sh, yp, gp, dp, out, n);
}

}  // namespace emu::EMU_CUDA_NS
