// Embedding: a table of vectors looked up by id.
//   ids: (...) float tensor of exact integers in [0, num_embeddings) -> y: (..., dim); weight:
//   (num_embeddings, dim)
// Forward: y[..., :] = R_out(W_r[id, :]) with W_r the weight read in the weights format.
// Backward (weight only; ids take no gradient): gw[r, j] = R_g(sum over the positions p with id_p == r, in
// ascending row-major position of the id in the input, of g[p, j]), a sum in the layer's acc format (mul
// exact, chunks over the occurrences), g read in the grads format; rows never looked up get +0. The
// padding_idx row (if any) is looked up like any other row but gets no gradient (+0).
// docs/layers_sequence.md has the details.
#pragma once

#include "core/module.h"

namespace emu {

class Embedding : public Module {
 public:
  // padding_idx < 0: no padding row.
  Embedding(int64_t num_embeddings, int64_t embedding_dim, int64_t padding_idx = -1);
  Tensor forward(const Tensor& ids);
  // uniform(+-sqrt(3)): unit variance, as PyTorch's N(0, 1) (whose draws need a logarithm); the padding row
  // is then set to zero, as in PyTorch.
  void reset_parameters() override;
  std::string type_name() const override { return "Embedding"; }

  int64_t num_embeddings, embedding_dim, padding_idx;
  Tensor weight;
};

// The op itself, for layers that hold their table elsewhere (tied weights). `m` gives the numerics, the
// path of the draw keys and the step.
Tensor embedding(const Module& m, const Tensor& ids, const Tensor& weight, int64_t padding_idx = -1);

}  // namespace emu
