#include "core/attention_checks.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/op_checks.h"

namespace emu {
namespace {

// D of a (N, L, heads*D) operand.
int64_t head_dim(const char* op, const char* what, const Tensor& t, int64_t heads) {
  if (t.ndim() != 3 || heads <= 0 || t.dim(2) % heads != 0)
    throw std::invalid_argument(fmt::format("{}: {} of shape {} is not (N, L, {} heads x D)", op, what,
                                            shape_string(t.shape()), heads));
  return t.dim(2) / heads;
}

// a (N,H,T,S) and a (N, L, H*D) operand that must agree with it.
AttentionDims weights_dims(const char* op, const Tensor& a, const Tensor& other, int64_t heads,
                           bool other_is_keys) {
  if (a.ndim() != 4 || a.dim(1) != heads)
    throw std::invalid_argument(
        fmt::format("{}: weights of shape {} are not (N, {}, T, S)", op, shape_string(a.shape()), heads));
  const int64_t D = head_dim(op, other_is_keys ? "y" : "x", other, heads);
  const AttentionDims d{a.dim(0), a.dim(2), a.dim(3), heads, D};
  if (other.dim(0) != d.N || other.dim(1) != (other_is_keys ? d.S : d.T))
    throw std::invalid_argument(fmt::format("{}: weights {} and operand {} disagree", op,
                                            shape_string(a.shape()), shape_string(other.shape())));
  return d;
}

// s (N,H,T,S) and the key padding mask (N,S) or null.
AttentionScores scores_of(const char* op, const Tensor& s, const Tensor* key_padding) {
  if (s.ndim() != 4)
    throw std::invalid_argument(
        fmt::format("{}: scores of shape {} are not (N, H, T, S)", op, shape_string(s.shape())));
  const AttentionScores sc{s.dim(0), s.dim(1), s.dim(2), s.dim(3)};
  if (key_padding && key_padding->shape() != Shape{sc.N, sc.S})
    throw std::invalid_argument(fmt::format("{}: key padding mask of shape {} for scores {}, want ({}, {})",
                                            op, shape_string(key_padding->shape()), shape_string(s.shape()),
                                            sc.N, sc.S));
  return sc;
}

}  // namespace

AttentionDims check_attention_scores(int64_t heads, const Tensor& x, const Tensor& y, const Tensor& s) {
  const char* op = "attention_scores";
  const int64_t D = head_dim(op, "x", x, heads);
  if (head_dim(op, "y", y, heads) != D || y.dim(0) != x.dim(0))
    throw std::invalid_argument(
        fmt::format("{}: x {} and y {} disagree", op, shape_string(x.shape()), shape_string(y.shape())));
  const AttentionDims d{x.dim(0), x.dim(1), y.dim(1), heads, D};
  check_result(op, "s", s, {d.N, d.H, d.T, d.S});
  return d;
}

AttentionDims check_attention_context(int64_t heads, const Tensor& a, const Tensor& y, const Tensor& c) {
  const char* op = "attention_context";
  const AttentionDims d = weights_dims(op, a, y, heads, true);
  check_result(op, "c", c, {d.N, d.T, d.E()});
  return d;
}

AttentionDims check_attention_context_transposed(int64_t heads, const Tensor& a, const Tensor& x,
                                                 const Tensor& c) {
  const char* op = "attention_context_transposed";
  const AttentionDims d = weights_dims(op, a, x, heads, false);
  check_result(op, "c", c, {d.N, d.S, d.E()});
  return d;
}

AttentionScores check_attention_softmax_forward(const Tensor& s, const Tensor* key_padding,
                                                const Tensor& probs) {
  const char* op = "attention_softmax_forward";
  const AttentionScores sc = scores_of(op, s, key_padding);
  check_result(op, "probs", probs, s.shape());
  return sc;
}

AttentionScores check_attention_softmax_backward(const Tensor& probs, const Tensor& gprobs,
                                                 const Tensor* key_padding, const Tensor& gs) {
  const char* op = "attention_softmax_backward";
  const AttentionScores sc = scores_of(op, probs, key_padding);
  if (gprobs.shape() != probs.shape())
    throw std::invalid_argument(fmt::format("{}: gprobs {} for probs {}", op, shape_string(gprobs.shape()),
                                            shape_string(probs.shape())));
  check_result(op, "gs", gs, probs.shape());
  return sc;
}

}  // namespace emu
