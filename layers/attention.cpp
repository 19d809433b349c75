#include "layers/attention.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/autograd.h"
#include "layers/dropout.h"
#include "layers/layer_io.h"
#include "numerics/functions.h"
#include "numerics/philox.h"

namespace emu {
namespace {

// Stage offsets of the core's steps in its Forward and GradInput keys (each op
// adds its own stages, fewer than 8, on top).
namespace stage {
constexpr uint32_t kScores = 0, kSoftmax = 8, kDropout = 16, kContext = 24;                  // Forward
constexpr uint32_t kGradWeights = 0, kGradValues = 8, kGradDropout = 16, kGradSoftmax = 24,  // GradInput
    kGradQueries = 32, kGradKeys = 40;
}  // namespace stage

DrawKey at_stage(DrawKey key, uint32_t s) { return nn_stage_key(key, s); }

// Dropout of the weights w (N,H,T,S) in format f: the dropout op with the scale's
// own rounding drawing at index 0 of the stream after the op's (as layers/dropout.cpp).
Tensor drop(Backend& be, float p, const Format& f, const Tensor& w, DrawKey mask_key, DrawKey round_key) {
  const float scale =
      dropout_scale(f, p, is_stochastic(f) ? philox_draw(round_key.seed, round_key.stream + 1, 0) : 0u);
  Tensor y = Tensor::zeros(w.shape(), w.device());
  be.dropout(p, scale, f, w, y, mask_key, round_key);
  return y;
}

}  // namespace

float attention_scale(int64_t head_dim) {
  if (head_dim <= 0 || head_dim > (int64_t{1} << 24))
    throw std::invalid_argument(fmt::format("attention: head dimension {} out of range", head_dim));
  return fn_rsqrt(static_cast<float>(head_dim));  // exact: head_dim <= 2^24 is a binary32 integer
}

Tensor attention(const Module& m, const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor& key_padding_mask, const AttentionOptions& o, AttentionTrace* trace) {
  const int64_t H = o.heads;
  const bool shapes_ok = H > 0 && q.ndim() == 3 && k.ndim() == 3 && v.ndim() == 3 && q.dim(2) % H == 0 &&
                         k.dim(2) == q.dim(2) && v.dim(2) % H == 0 && k.dim(0) == q.dim(0) &&
                         v.dim(0) == q.dim(0) && v.dim(1) == k.dim(1) && q.dim(2) > 0 && v.dim(2) > 0;
  if (!shapes_ok)
    throw std::invalid_argument(fmt::format("{}: attention of q {}, k {}, v {} with {} heads", m.path(),
                                            shape_string(q.shape()), shape_string(k.shape()),
                                            shape_string(v.shape()), H));
  const int64_t N = q.dim(0), T = q.dim(1), S = k.dim(1), Dv = v.dim(2) / H;
  if (key_padding_mask.defined() && key_padding_mask.shape() != Shape{N, S})
    throw std::invalid_argument(fmt::format("{}: key padding mask of shape {}, want ({}, {})", m.path(),
                                            shape_string(key_padding_mask.shape()), N, S));
  if (!(o.dropout >= 0.0f && o.dropout <= 1.0f))
    throw std::invalid_argument(
        fmt::format("{}: attention dropout {} is not in [0, 1]", m.path(), o.dropout));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(q.device());
  const float scale = attention_scale(q.dim(2) / H);
  const DrawKey fwd = draw_key(m, DrawSite::Forward), read = draw_key(m, DrawSite::ReadInput);
  const Tensor mask = key_padding_mask.defined() ? key_padding_mask.contiguous() : Tensor();
  const Tensor* mask_p = mask.defined() ? &mask : nullptr;

  // The operands as read: q's reads draw from the ReadInput stream, k's and v's from the next two.
  Tensor qr = read_as(cn.activations, q.contiguous(), read);
  Tensor kr = read_as(cn.activations, k.contiguous(), at_stage(read, 1));
  Tensor vr = read_as(cn.activations, v.contiguous(), at_stage(read, 2));
  // q (N,T,H*D), k (N,S,H*D) -> scores (N,H,T,S) -> probs (N,H,T,S)
  Tensor scores = Tensor::zeros({N, H, T, S}, q.device());
  be.attention_scores(cn.mac, H, qr, kr, scores, at_stage(fwd, stage::kScores));
  Tensor probs = Tensor::zeros({N, H, T, S}, q.device());
  // The policy's softmax_exp (exact or pwl) even under layer-level emulation, as Softmax layers.
  be.attention_softmax_forward_fn(cn.mac, n.function(Function::SoftmaxExp), scale, o.causal, scores, mask_p,
                                  probs, at_stage(fwd, stage::kSoftmax));
  // Taken once, here, so that the backward drops the same weights even if the step advances.
  const bool dropping = o.training && o.dropout > 0.0f;
  const DrawKey mask_key = draw_key(m, DrawSite::Dropout);
  Tensor weights =
      dropping ? drop(be, o.dropout, cn.out(), probs, mask_key, at_stage(fwd, stage::kDropout)) : probs;
  // weights (N,H,T,S), v (N,S,H*Dv) -> context (N,T,H*Dv)
  Tensor ctx = Tensor::zeros({N, T, H * Dv}, q.device());
  be.attention_context(cn.mac, H, weights, vr, ctx, at_stage(fwd, stage::kContext));
  finish_output(n, ctx, fwd);
  if (trace) *trace = AttentionTrace{qr, kr, vr, scores, probs, weights};
  Tensor result = ctx.view(ctx.shape());

  const Module* mp = &m;
  const bool causal = o.causal;
  const float p_drop = o.dropout;
  record_lambda(result, "attention", {q, k, v}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    const MacPolicy bm = backward_mac(cn);
    const DrawKey gi = draw_key(*mp, DrawSite::GradInput);
    const Tensor* mask_p = mask.defined() ? &mask : nullptr;
    Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad));  // (N,T,H*Dv)
    Tensor gq, gk, gv;
    if (v.requires_grad()) {
      // weights^T (N,H,S,T), g (N,T,H*Dv) -> gv (N,S,H*Dv): reductions over the query position.
      gv = Tensor::zeros(v.shape(), gy.device());
      be.attention_context_transposed(bm, H, weights, g, gv, at_stage(gi, stage::kGradValues));
    }
    if (q.requires_grad() || k.requires_grad()) {
      // g (N,T,H*Dv), v (N,S,H*Dv) -> gw (N,H,T,S): reductions over the value feature.
      Tensor gw = Tensor::zeros({N, H, T, S}, gy.device());
      be.attention_scores(bm, H, g, vr, gw, at_stage(gi, stage::kGradWeights));
      Tensor gp = dropping ? drop(be, p_drop, cn.grads, gw, mask_key, at_stage(gi, stage::kGradDropout)) : gw;
      Tensor gs = Tensor::zeros({N, H, T, S}, gy.device());
      be.attention_softmax_backward(bm, scale, causal, probs, gp, mask_p, gs,
                                    at_stage(gi, stage::kGradSoftmax));
      if (q.requires_grad()) {
        // gs (N,H,T,S), k (N,S,H*D) -> gq (N,T,H*D): reductions over the key position.
        gq = Tensor::zeros(q.shape(), gy.device());
        be.attention_context(bm, H, gs, kr, gq, at_stage(gi, stage::kGradQueries));
      }
      if (k.requires_grad()) {
        // gs^T (N,H,S,T), q (N,T,H*D) -> gk (N,S,H*D): reductions over the query position.
        gk = Tensor::zeros(k.shape(), gy.device());
        be.attention_context_transposed(bm, H, gs, qr, gk, at_stage(gi, stage::kGradKeys));
      }
    }
    for (Tensor* t : {&gq, &gk, &gv}) finish_grad(n, *t, gi);
    return {gq, gk, gv};
  });
  return result;
}

MultiheadAttention::MultiheadAttention(int64_t embed, int64_t heads, float dropout_, bool bias,
                                       int64_t head_dim_, int64_t kdim, int64_t vdim)
    : embed_dim(embed), num_heads(heads), head_dim(head_dim_), dropout(dropout_) {
  if (embed <= 0 || heads <= 0 || head_dim_ < 0 || kdim < 0 || vdim < 0 ||
      (head_dim_ == 0 && embed % heads != 0) || !(dropout_ >= 0.0f && dropout_ <= 1.0f))
    throw std::invalid_argument(fmt::format(
        "MultiheadAttention(embed_dim {}, num_heads {}, dropout {}, head_dim {}): sizes must be positive, "
        "num_heads must divide embed_dim unless head_dim is given, dropout in [0, 1]",
        embed, heads, dropout_, head_dim_));
  if (head_dim == 0) head_dim = embed / heads;
  const int64_t inner = heads * head_dim;
  q_proj = register_module("q_proj", std::make_shared<Linear>(embed, inner, bias));
  k_proj = register_module("k_proj", std::make_shared<Linear>(kdim ? kdim : embed, inner, bias));
  v_proj = register_module("v_proj", std::make_shared<Linear>(vdim ? vdim : embed, inner, bias));
  out_proj = register_module("out_proj", std::make_shared<Linear>(inner, embed, bias));
}

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const Tensor& key_padding_mask, bool causal, AttentionTrace* trace) {
  if (query.ndim() != 3 || key.ndim() != 3 || value.ndim() != 3)
    throw std::invalid_argument(fmt::format("{}: query {}, key {}, value {} are not batch-first (N, L, E)",
                                            path(), shape_string(query.shape()), shape_string(key.shape()),
                                            shape_string(value.shape())));
  Tensor q = q_proj->forward(query), k = k_proj->forward(key), v = v_proj->forward(value);
  AttentionOptions o;
  o.heads = num_heads;
  o.causal = causal;
  o.dropout = dropout;
  o.training = is_training();
  return out_proj->forward(attention(*this, q, k, v, key_padding_mask, o, trace));
}

}  // namespace emu
