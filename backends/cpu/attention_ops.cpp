// The per-head matrix products and the masked softmax of multi-head attention
// on the CPU. Definitions (orders, stages, draws): core/backend_ops_attention.h
// and docs/layers_attention.md.
//
// Each head's product is one mac_gemm (backends/cpu/gemm.h: the canonical
// per-output order whichever fast path runs) on strided views of the
// (N, T, H*D) activations, with the one operand that needs a transpose packed.
// Many heads run side by side with single-threaded GEMMs; few heads run one
// after the other with threaded GEMMs. Policies that draw (:sr anywhere in the
// reduction) run mac_reduce per output here, so that every output draws at its
// row-major index in the whole result, not in its head's block.
#include <algorithm>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/reduce_arith.h"
#include "backends/cpu/row_ops.h"
#include "core/attention_checks.h"
#include "core/tensor.h"
#include "numerics/functions_lanes.h"
#include "numerics/pwl.h"

namespace emu {
namespace {

// --- per-head products ---------------------------------------------------

// Whether any rounding of a reduction under p draws random bits.
bool reduction_draws(const MacPolicy& p) {
  return (!p.mul_exact && is_stochastic(p.mul)) || is_stochastic(p.acc) || is_stochastic(p.out) ||
         (p.chunk > 0 && is_stochastic(p.acc_outer));
}

// One head's C (M,N) = A (M,K) B (K,N), all row-major with leading dimensions.
// C points into the contiguous result that starts at `result`: output (i, j)
// draws at its index there, (C + i*ldc + j) - result.
struct HeadProduct {
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float* C;
  int64_t ldc;
  int64_t M, N, K;
};

void run_head(const MacPolicy& p, const HeadProduct& h, const float* result, DrawKey key, int threads) {
  if (!reduction_draws(p)) {
    mac_gemm(p, h.A, h.lda, h.B, h.ldb, h.C, h.ldc, h.M, h.N, h.K, nullptr, GemmDraws{key.seed, key.stream},
             threads);
    return;
  }
  std::vector<float> bt(static_cast<size_t>(h.N * h.K));  // B transposed: column j's terms in k order
  for (int64_t k = 0; k < h.K; ++k)
    for (int64_t j = 0; j < h.N; ++j) bt[j * h.K + k] = h.B[k * h.ldb + j];
  const uint64_t sites = mac_site_count(h.K, p.chunk);
  for (int64_t i = 0; i < h.M; ++i)
    for (int64_t j = 0; j < h.N; ++j) {
      float* c = h.C + i * h.ldc + j;
      const uint64_t base = static_cast<uint64_t>(c - result) * sites;
      auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream, base + site); };
      *c = static_cast<float>(
          mac_reduce(p, offset_or_null(h.A, i * h.lda), bt.data() + j * h.K, h.K, nullptr, draw));
    }
}

// Runs make(b, scratch) -> HeadProduct for every head b in [0, heads): side by
// side when there are enough heads to keep the threads busy, else in turn with
// threaded GEMMs. `scratch` holds the head's packed operand.
template <class Make>
void run_heads(const MacPolicy& p, int64_t heads, const float* result, DrawKey key, int threads,
               const Make& make) {
  const int t = resolve_threads(threads);
  if (heads >= t || reduction_draws(p)) {
    parallel_for(heads, t, 1, [&](int64_t b0, int64_t b1) {
      std::vector<float> scratch;
      for (int64_t b = b0; b < b1; ++b) run_head(p, make(b, scratch), result, key, 1);
    });
  } else {
    std::vector<float> scratch;
    for (int64_t b = 0; b < heads; ++b) run_head(p, make(b, scratch), result, key, t);
  }
}

using Dims = AttentionDims;  // checked by core/attention_checks.h

// --- masked softmax --------------------------------------------------------

using namespace cpu_rows;

struct SoftmaxShape {
  int64_t N, H, T, S;
  const float* mask;  // (N, S) or null
  bool causal;
  const float* mask_row(int64_t r) const { return mask ? mask + (r / (H * T)) * S : nullptr; }
  int64_t query(int64_t r) const { return r % T; }
};

// The rows of checked scores (core/attention_checks.h) and the mask's contiguous copy (or undefined).
SoftmaxShape softmax_shape(const AttentionScores& d, const Tensor& mask_c, bool causal) {
  return SoftmaxShape{d.N, d.H, d.T, d.S, mask_c.defined() ? mask_c.data() : nullptr, causal};
}

template <class A>
void softmax_rows(A a, const MacPolicy& p, const FunctionApprox& exp, float scale, const SoftmaxShape& sh,
                  bool native, const float* s, float* y, DrawKey key, int64_t r0, int64_t r1) {
  using namespace attention_site;
  const int64_t S = sh.S;
  const MacRounding sum(plain_sum_policy(p));
  const std::vector<float> ones(static_cast<size_t>(S), 1.0f);
  std::vector<float> e(static_cast<size_t>(S));
  std::vector<char> keep(static_cast<size_t>(S));
  for (int64_t r = r0; r < r1; ++r) {
    const float* sr = s + r * S;
    float* yr = y + r * S;
    const float* mask = sh.mask_row(r);
    const int64_t t = sh.query(r);
    bool any = false;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < S; ++j) {
      keep[j] = !attention_masked(mask, sh.causal, t, j);
      if (!keep[j]) continue;
      any = true;
      a.at(static_cast<uint64_t>(r * S + j));
      const float z = a.mul(sr[j], scale, kScale);
      yr[j] = z;
      m = z > m ? z : m;
    }
    if (!any) {
      std::fill_n(yr, S, 0.0f);
      continue;
    }
    // e[j] = step(j) for the kept j, with their draw index set; 0 for the others (not terms of the sum).
    auto each_kept = [&](auto&& step) {
      for (int64_t j = 0; j < S; ++j) {
        if (!keep[j]) {
          e[j] = 0.0f;
          continue;
        }
        a.at(static_cast<uint64_t>(r * S + j));
        e[j] = step(j);
      }
    };
    if (exp.pwl()) {
      each_kept([&](int64_t j) { return pwl_value(exp, a, a.sub(yr[j], m, kSub), kExp, kPwlMul); });
    } else {  // the differences, fn_exp eight lanes at a time (numerics/functions_lanes.h), the roundings
      each_kept([&](int64_t j) { return a.sub(yr[j], m, kSub); });
      fn_exp_array(e.data(), e.data(), S);
      each_kept([&](int64_t j) { return a.round(e[j], kExp); });
    }
    double total;
    if (native) {
      float acc = 0.0f;
      for (int64_t j = 0; j < S; ++j)
        if (e[j] != 0.0f) acc = fp32_op::add(acc, e[j]);
      total = acc;
    } else {
      total = sum.reduce(e.data(), ones.data(), S, row_draws(key, kSum, r, S, p.chunk));
    }
    for (int64_t j = 0; j < S; ++j) {
      if (!keep[j]) {
        yr[j] = 0.0f;
        continue;
      }
      a.at(static_cast<uint64_t>(r * S + j));
      yr[j] = a.div_wide(e[j], total, kResult);
    }
  }
}

template <class A>
void softmax_grad_rows(A a, const MacPolicy& p, float scale, const SoftmaxShape& sh, const float* y,
                       const float* gy, float* gx, DrawKey key, int64_t r0, int64_t r1) {
  using namespace attention_site;
  const int64_t S = sh.S;
  const MacRounding dp(p);
  const bool fast_dot = native_dot(p);
  for (int64_t r = r0; r < r1; ++r) {
    const float* yr = y + r * S;
    const float* gr = gy + r * S;
    float* out = gx + r * S;
    const float* mask = sh.mask_row(r);
    const int64_t t = sh.query(r);
    float dot;
    if (fast_dot) {
      float acc = 0.0f;
      for (int64_t j = 0; j < S; ++j)
        if (gr[j] != 0.0f && yr[j] != 0.0f) acc = fp32_op::add(acc, fp32_op::mul(gr[j], yr[j]));
      dot = acc;
    } else {
      dot = static_cast<float>(dp.reduce(gr, yr, S, row_draws(key, kReduce, r, S, p.chunk)));
    }
    for (int64_t j = 0; j < S; ++j) {
      if (attention_masked(mask, sh.causal, t, j)) {
        out[j] = 0.0f;
        continue;
      }
      a.at(static_cast<uint64_t>(r * S + j));
      out[j] = a.mul(a.mul(yr[j], a.sub(gr[j], dot, kStep1), kStep2), scale, kGradScale);
    }
  }
}

}  // namespace

// x (N,T,H*D), y (N,S,H*D) -> s (N,H,T,S)
void CpuBackend::attention_scores(const MacPolicy& p, int64_t heads, const Tensor& x, const Tensor& y,
                                  Tensor& s, DrawKey key) {
  const Dims d = check_attention_scores(heads, x, y, s);
  const Tensor X = x.contiguous(), Y = y.contiguous();
  const float *xp = X.data(), *yp = Y.data();
  float* sp = s.data();
  const int64_t E = d.H * d.D;
  run_heads(p, d.N * d.H, sp, key, threads_, [&](int64_t b, std::vector<float>& yt) {
    const int64_t n = b / d.H, h = b % d.H;
    yt.resize(static_cast<size_t>(d.D * d.S));  // y's head transposed: (D, S)
    const float* src = offset_or_null(yp, n * d.S * E + h * d.D);
    for (int64_t j = 0; j < d.S; ++j)
      for (int64_t k = 0; k < d.D; ++k) yt[k * d.S + j] = src[j * E + k];
    return HeadProduct{offset_or_null(xp, n * d.T * E + h * d.D),
                       E,
                       yt.data(),
                       d.S,
                       offset_or_null(sp, b * d.T * d.S),
                       d.S,
                       d.T,
                       d.S,
                       d.D};
  });
}

// a (N,H,T,S), y (N,S,H*D) -> c (N,T,H*D)
void CpuBackend::attention_context(const MacPolicy& p, int64_t heads, const Tensor& a, const Tensor& y,
                                   Tensor& c, DrawKey key) {
  const Dims d = check_attention_context(heads, a, y, c);
  const int64_t E = d.E();
  const Tensor A = a.contiguous(), Y = y.contiguous();
  const float *ap = A.data(), *yp = Y.data();
  float* cp = c.data();
  run_heads(p, d.N * d.H, cp, key, threads_, [&](int64_t b, std::vector<float>&) {
    const int64_t n = b / d.H, h = b % d.H;
    return HeadProduct{offset_or_null(ap, b * d.T * d.S),
                       d.S,
                       offset_or_null(yp, n * d.S * E + h * d.D),
                       E,
                       offset_or_null(cp, n * d.T * E + h * d.D),
                       E,
                       d.T,
                       d.D,
                       d.S};
  });
}

// a (N,H,T,S), x (N,T,H*D) -> c (N,S,H*D)
void CpuBackend::attention_context_transposed(const MacPolicy& p, int64_t heads, const Tensor& a,
                                              const Tensor& x, Tensor& c, DrawKey key) {
  const Dims d = check_attention_context_transposed(heads, a, x, c);
  const int64_t E = d.E();
  const Tensor A = a.contiguous(), X = x.contiguous();
  const float *ap = A.data(), *xp = X.data();
  float* cp = c.data();
  run_heads(p, d.N * d.H, cp, key, threads_, [&](int64_t b, std::vector<float>& at) {
    const int64_t n = b / d.H, h = b % d.H;
    at.resize(static_cast<size_t>(d.S * d.T));  // a's head transposed: (S, T)
    const float* src = offset_or_null(ap, b * d.T * d.S);
    for (int64_t t = 0; t < d.T; ++t)
      for (int64_t j = 0; j < d.S; ++j) at[j * d.T + t] = src[t * d.S + j];
    return HeadProduct{at.data(),
                       d.T,
                       offset_or_null(xp, n * d.T * E + h * d.D),
                       E,
                       offset_or_null(cp, n * d.S * E + h * d.D),
                       E,
                       d.S,
                       d.D,
                       d.T};
  });
}

// s (N,H,T,S), key_padding (N,S) or null -> probs (N,H,T,S)
void CpuBackend::attention_softmax_forward(const MacPolicy& p, float scale, bool causal, const Tensor& s,
                                           const Tensor* key_padding, Tensor& probs, DrawKey key) {
  attention_softmax_forward_fn(p, FunctionApprox{}, scale, causal, s, key_padding, probs, key);
}

// s (N,H,T,S), key_padding (N,S) or null -> probs (N,H,T,S), exp exact or pwl
void CpuBackend::attention_softmax_forward_fn(const MacPolicy& p, const FunctionApprox& exp, float scale,
                                              bool causal, const Tensor& s, const Tensor* key_padding,
                                              Tensor& probs, DrawKey key) {
  const AttentionScores d = check_attention_softmax_forward(s, key_padding, probs);
  const Tensor mask = key_padding ? key_padding->contiguous() : Tensor();
  const SoftmaxShape sh = softmax_shape(d, mask, causal);
  const Tensor Sc = s.contiguous();
  const float* sp = Sc.data();
  float* yp = probs.data();
  const bool native = native_sum(p);
  const bool fast = native && is_plain_fp32(p.out);
  const ElementArith arith(p.out, key.seed, key.stream);
  parallel_for(sh.N * sh.H * sh.T, threads_, row_grain(sh.S), [&](int64_t r0, int64_t r1) {
    if (fast)
      softmax_rows(Fp32Arith{}, p, exp, scale, sh, true, sp, yp, key, r0, r1);
    else
      softmax_rows(arith, p, exp, scale, sh, native, sp, yp, key, r0, r1);
  });
}

// probs, gprobs (N,H,T,S), key_padding (N,S) or null -> gs (N,H,T,S)
void CpuBackend::attention_softmax_backward(const MacPolicy& p, float scale, bool causal, const Tensor& probs,
                                            const Tensor& gprobs, const Tensor* key_padding, Tensor& gs,
                                            DrawKey key) {
  const AttentionScores d = check_attention_softmax_backward(probs, gprobs, key_padding, gs);
  const Tensor mask = key_padding ? key_padding->contiguous() : Tensor();
  const SoftmaxShape sh = softmax_shape(d, mask, causal);
  const Tensor Y = probs.contiguous(), G = gprobs.contiguous();
  const float *yp = Y.data(), *gp = G.data();
  float* out = gs.data();
  const ElementArith arith(p.out, key.seed, key.stream);
  const bool plain = is_plain_fp32(p.out);
  parallel_for(sh.N * sh.H * sh.T, threads_, row_grain(sh.S), [&](int64_t r0, int64_t r1) {
    if (plain)
      softmax_grad_rows(Fp32Arith{}, p, scale, sh, yp, gp, out, key, r0, r1);
    else
      softmax_grad_rows(arith, p, scale, sh, yp, gp, out, key, r0, r1);
  });
}

}  // namespace emu
