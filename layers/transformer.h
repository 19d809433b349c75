// Transformer blocks, batch first: x (N, T, E) -> (N, T, E).
//
// TransformerEncoderBlock, pre-norm (norm_first, the Keras time-series
// Transformer of the FordA recipe):
//   a = x + dropout1(self_attn(norm1(x)))
//   y = a + linear2(dropout(act(linear1(norm2(a)))))
// post-norm (PyTorch's default order):
//   a = norm1(x + dropout1(self_attn(x)))
//   y = norm2(a + linear2(dropout(act(linear1(a)))))
// The feed-forward Linear layers act on the last dimension, which is what the
// Keras block's Conv1D(kernel_size=1) layers compute. Unlike PyTorch's
// TransformerEncoderLayer there is no second dropout after linear2 (as Keras).
//
// TransformerDecoderBlock: causal self-attention, cross-attention over the
// encoder's memory (with the memory's key padding mask), feed-forward:
//   pre-norm:  a = x + dropout1(self_attn(norm1(x)));  b = a + dropout2(cross_attn(norm2(a), memory))
//              y = b + linear2(dropout(act(linear1(norm3(b)))))
//   post-norm: a = norm1(x + dropout1(self_attn(x)));  b = norm2(a + dropout2(cross_attn(a, memory)))
//              y = norm3(b + linear2(dropout(act(linear1(b)))))
// Residual adds are Add modules (add1, add2, add3), so their numerics can be
// set by path like every other sub-module's.
#pragma once

#include <memory>

#include "core/backend.h"
#include "layers/activation.h"
#include "layers/attention.h"
#include "layers/dropout.h"
#include "layers/layernorm.h"
#include "layers/linear.h"
#include "layers/sequential.h"
#include "layers/shape_ops.h"

namespace emu {

struct TransformerBlockOptions {
  int64_t embed_dim = 0;  // E
  int64_t num_heads = 1;
  int64_t ff_dim = 0;    // hidden width of the feed-forward part
  float dropout = 0.1f;  // every dropout of the block, attention weights included
  bool norm_first = true;
  float eps = 1e-5f;  // of the LayerNorms
  Activation activation = Activation::Relu;
  int64_t head_dim = 0;  // 0: embed_dim / num_heads
};

class TransformerEncoderBlock : public UnaryModule {
 public:
  explicit TransformerEncoderBlock(const TransformerBlockOptions& options);
  // x (N,T,E), key_padding_mask (N,T) (nonzero: position ignored as a key) or undefined.
  Tensor forward(const Tensor& x, const Tensor& key_padding_mask, bool causal = false);
  Tensor forward(const Tensor& x) override { return forward(x, Tensor()); }
  std::string type_name() const override { return "TransformerEncoderBlock"; }

  TransformerBlockOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Dropout> dropout, dropout1;
  std::shared_ptr<ActivationLayer> activation;
  std::shared_ptr<Add> add1, add2;
};

class TransformerDecoderBlock : public Module {
 public:
  explicit TransformerDecoderBlock(const TransformerBlockOptions& options);
  // x (N,T,E), memory (N,S,E); memory_key_padding_mask (N,S), tgt_key_padding_mask (N,T), each
  // optional; causal: the self-attention sees positions j <= t only.
  Tensor forward(const Tensor& x, const Tensor& memory, const Tensor& memory_key_padding_mask = Tensor(),
                 const Tensor& tgt_key_padding_mask = Tensor(), bool causal = true);
  std::string type_name() const override { return "TransformerDecoderBlock"; }

  TransformerBlockOptions options;
  std::shared_ptr<MultiheadAttention> self_attn, cross_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<ActivationLayer> activation;
  std::shared_ptr<Add> add1, add2, add3;
};

}  // namespace emu
