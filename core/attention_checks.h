// The argument checks of the attention products and the attention softmax
// (EMU_OPS_ATTENTION_PRODUCTS, EMU_OPS_ATTENTION_SOFTMAX, core/backend_ops_attention.h),
// one definition for every backend, so a bad call fails with the same message on
// the CPU and on a device, before any work. Each check throws std::invalid_argument
// naming the op and the argument.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace emu {

// N sequences, T queries, S keys, H heads of D features (E = H*D per position).
struct AttentionDims {
  int64_t N, T, S, H, D;
  int64_t E() const { return H * D; }
};

// x (N,T,H*D), y (N,S,H*D) -> s (N,H,T,S)
AttentionDims check_attention_scores(int64_t heads, const Tensor& x, const Tensor& y, const Tensor& s);
// a (N,H,T,S), y (N,S,H*D) -> c (N,T,H*D)
AttentionDims check_attention_context(int64_t heads, const Tensor& a, const Tensor& y, const Tensor& c);
// a (N,H,T,S), x (N,T,H*D) -> c (N,S,H*D)
AttentionDims check_attention_context_transposed(int64_t heads, const Tensor& a, const Tensor& x,
                                                 const Tensor& c);

// Scores (N,H,T,S) of the attention softmax.
struct AttentionScores {
  int64_t N, H, T, S;
};

// s (N,H,T,S), key_padding (N,S) or null -> probs (N,H,T,S); both forward ops.
AttentionScores check_attention_softmax_forward(const Tensor& s, const Tensor* key_padding,
                                                const Tensor& probs);
// probs, gprobs (N,H,T,S), key_padding (N,S) or null -> gs (N,H,T,S)
AttentionScores check_attention_softmax_backward(const Tensor& probs, const Tensor& gprobs,
                                                 const Tensor* key_padding, const Tensor& gs);

}  // namespace emu
