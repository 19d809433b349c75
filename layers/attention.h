// Multi-head attention, batch first (PyTorch's MultiheadAttention with
// batch_first=True, Keras' MultiHeadAttention).
//   query (N, T, E_q), key (N, S, E_k), value (N, S, E_v) -> (N, T, E_q)
// Query, key and value are projected by Linear layers to H heads of D features
// (q_proj, k_proj, v_proj), attended per head, and the concatenated heads are
// projected back by out_proj. Per head:
//   scores = Q K^T          reductions over the head feature d, ascending
//   P      = softmax(scores * c) over the unmasked key positions, c = 1/sqrt(D) as a binary32 constant
//   P'     = dropout(P)     (training only; Philox keyed by the layer's path and step)
//   context = P' V          reductions over the key position j, ascending
// Masked key positions (key padding, causal) get probability exactly 0 and
// enter neither the softmax's max nor its sum. Every step, its rounding and its
// draws are in core/backend_ops_attention.h and docs/layers_attention.md.
#pragma once

#include <memory>

#include "core/module.h"
#include "layers/linear.h"

namespace emu {

struct AttentionOptions {
  int64_t heads = 1;
  bool causal = false;   // query t attends to key positions j <= t only
  float dropout = 0.0f;  // on the attention weights, when training
  bool training = false;
};

// What attention() computed, for tests and inspection (filled when asked for).
struct AttentionTrace {
  Tensor q, k, v;  // the operands as read into the activations format: (N,T,H*D), (N,S,H*D), (N,S,H*Dv)
  Tensor scores;   // (N,H,T,S): q k^T per head, before the scale
  Tensor probs;    // (N,H,T,S): the softmax; masked positions are exactly +0
  Tensor weights;  // (N,H,T,S): probs after dropout (probs itself without dropout)
};

// c = 1/sqrt(D) in binary32: fn_rsqrt, correctly rounded (exact when D is a power of 4).
float attention_scale(int64_t head_dim);

// The attention core (no projections). q: (N,T,H*D), k: (N,S,H*D), v: (N,S,H*Dv),
// key_padding_mask: (N,S), nonzero where a key is ignored, or undefined -> (N,T,H*Dv).
// `m` gives the numerics, the path of the draw keys and the step.
Tensor attention(const Module& m, const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor& key_padding_mask, const AttentionOptions& options,
                 AttentionTrace* trace = nullptr);

class MultiheadAttention : public Module {
 public:
  // head_dim 0: embed_dim / num_heads (which must divide); kdim, vdim 0: embed_dim
  // (the feature sizes of the key and value inputs).
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, float dropout = 0.0f, bool bias = true,
                     int64_t head_dim = 0, int64_t kdim = 0, int64_t vdim = 0);
  // query (N,T,E), key (N,S,kdim), value (N,S,vdim), key_padding_mask (N,S) or undefined -> (N,T,E).
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value,
                 const Tensor& key_padding_mask = Tensor(), bool causal = false,
                 AttentionTrace* trace = nullptr);
  // Self-attention: forward(x, x, x).
  Tensor forward(const Tensor& x) { return forward(x, x, x); }
  std::string type_name() const override { return "MultiheadAttention"; }

  int64_t embed_dim, num_heads, head_dim;
  float dropout;
  std::shared_ptr<Linear> q_proj, k_proj, v_proj, out_proj;
};

}  // namespace emu
