#include "layers/transformer.h"

#include <fmt/format.h>

#include <stdexcept>

namespace emu {
namespace {

void check_options(const char* what, const TransformerBlockOptions& o) {
  if (o.embed_dim <= 0 || o.num_heads <= 0 || o.ff_dim <= 0)
    throw std::invalid_argument(fmt::format("{}: embed_dim {}, num_heads {} and ff_dim {} must be positive",
                                            what, o.embed_dim, o.num_heads, o.ff_dim));
}

std::shared_ptr<ActivationLayer> make_activation(Activation kind) {
  switch (kind) {
    case Activation::Relu:
      return std::make_shared<ReLU>();
    case Activation::Gelu:
      return std::make_shared<GELU>();
    case Activation::Silu:
      return std::make_shared<SiLU>();
    case Activation::Tanh:
      return std::make_shared<Tanh>();
    case Activation::Sigmoid:
      return std::make_shared<Sigmoid>();
  }
  return std::make_shared<ReLU>();
}

std::shared_ptr<MultiheadAttention> make_attention(const TransformerBlockOptions& o) {
  return std::make_shared<MultiheadAttention>(o.embed_dim, o.num_heads, o.dropout, true, o.head_dim);
}

// linear2(dropout(act(linear1(x)))): the position-wise feed-forward part.
template <class Block>
Tensor feed_forward(Block& b, const Tensor& x) {
  return b.linear2->forward(b.dropout->forward(b.activation->forward(b.linear1->forward(x))));
}

}  // namespace

TransformerEncoderBlock::TransformerEncoderBlock(const TransformerBlockOptions& o) : options(o) {
  check_options("TransformerEncoderBlock", o);
  self_attn = register_module("self_attn", make_attention(o));
  linear1 = register_module("linear1", std::make_shared<Linear>(o.embed_dim, o.ff_dim));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.ff_dim, o.embed_dim));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(o.embed_dim, o.eps));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(o.embed_dim, o.eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
  activation = register_module("activation", make_activation(o.activation));
  add1 = register_module("add1", std::make_shared<Add>());
  add2 = register_module("add2", std::make_shared<Add>());
}

Tensor TransformerEncoderBlock::forward(const Tensor& x, const Tensor& key_padding_mask, bool causal) {
  if (x.ndim() != 3 || x.dim(2) != options.embed_dim)
    throw std::invalid_argument(fmt::format("{}: input of shape {} is not (N, T, {})", path(),
                                            shape_string(x.shape()), options.embed_dim));
  if (options.norm_first) {
    Tensor h = norm1->forward(x);
    Tensor a = add1->forward(x, dropout1->forward(self_attn->forward(h, h, h, key_padding_mask, causal)));
    return add2->forward(a, feed_forward(*this, norm2->forward(a)));
  }
  Tensor a = norm1->forward(
      add1->forward(x, dropout1->forward(self_attn->forward(x, x, x, key_padding_mask, causal))));
  return norm2->forward(add2->forward(a, feed_forward(*this, a)));
}

TransformerDecoderBlock::TransformerDecoderBlock(const TransformerBlockOptions& o) : options(o) {
  check_options("TransformerDecoderBlock", o);
  self_attn = register_module("self_attn", make_attention(o));
  cross_attn = register_module("cross_attn", make_attention(o));
  linear1 = register_module("linear1", std::make_shared<Linear>(o.embed_dim, o.ff_dim));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.ff_dim, o.embed_dim));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(o.embed_dim, o.eps));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(o.embed_dim, o.eps));
  norm3 = register_module("norm3", std::make_shared<LayerNorm>(o.embed_dim, o.eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
  activation = register_module("activation", make_activation(o.activation));
  add1 = register_module("add1", std::make_shared<Add>());
  add2 = register_module("add2", std::make_shared<Add>());
  add3 = register_module("add3", std::make_shared<Add>());
}

Tensor TransformerDecoderBlock::forward(const Tensor& x, const Tensor& memory,
                                        const Tensor& memory_key_padding_mask,
                                        const Tensor& tgt_key_padding_mask, bool causal) {
  const int64_t E = options.embed_dim;
  if (x.ndim() != 3 || x.dim(2) != E || memory.ndim() != 3 || memory.dim(2) != E || memory.dim(0) != x.dim(0))
    throw std::invalid_argument(fmt::format("{}: input {} and memory {} are not (N, T, {}) and (N, S, {})",
                                            path(), shape_string(x.shape()), shape_string(memory.shape()), E,
                                            E));
  auto self = [&](const Tensor& h) {
    return dropout1->forward(self_attn->forward(h, h, h, tgt_key_padding_mask, causal));
  };
  auto cross = [&](const Tensor& h) {
    return dropout2->forward(cross_attn->forward(h, memory, memory, memory_key_padding_mask, false));
  };
  if (options.norm_first) {
    Tensor a = add1->forward(x, self(norm1->forward(x)));
    Tensor b = add2->forward(a, cross(norm2->forward(a)));
    return add3->forward(b, feed_forward(*this, norm3->forward(b)));
  }
  Tensor a = norm1->forward(add1->forward(x, self(x)));
  Tensor b = norm2->forward(add2->forward(a, cross(a)));
  return norm3->forward(add3->forward(b, feed_forward(*this, b)));
}

}  // namespace emu
