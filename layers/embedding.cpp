#include "layers/embedding.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/autograd.h"
#include "layers/init.h"
#include "layers/layer_io.h"

namespace emu {

Embedding::Embedding(int64_t num, int64_t dim, int64_t pad)
    : num_embeddings(num), embedding_dim(dim), padding_idx(pad) {
  if (num <= 0 || dim <= 0 || pad >= num || num >= (int64_t{1} << 24))
    throw std::invalid_argument(
        fmt::format("Embedding({}, {}, padding_idx {}): sizes must be positive, fewer than 2^24 rows, "
                    "padding_idx below the rows",
                    num, dim, pad));
  if (padding_idx < 0) padding_idx = -1;
  weight = register_parameter("weight", Tensor::zeros({num, dim}));
}

void Embedding::reset_parameters() {
  init_uniform(*this, weight, 1.7320508f, 0);  // sqrt(3) in binary32
  if (padding_idx >= 0) weight.narrow(0, padding_idx, 1).fill(0.0f);
}

Tensor Embedding::forward(const Tensor& ids) { return embedding(*this, ids, weight, padding_idx); }

Tensor embedding(const Module& m, const Tensor& ids, const Tensor& weight, int64_t padding_idx) {
  if (weight.ndim() != 2)
    throw std::invalid_argument(fmt::format("{}: the table must be (num_embeddings, dim), got {}", m.path(),
                                            shape_string(weight.shape())));
  const int64_t V = weight.dim(0), D = weight.dim(1), P = ids.numel();
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(weight.device());

  // ids (P) picks rows of w (1, V, D) -> y (1, P, D); the ids are kept for the backward.
  const Tensor idx = ids.contiguous().view({P}).clone();
  // A lookup, not a reduction: no N:M mask (docs/sparsity.md); faults still apply.
  Tensor wr =
      read_weight(m, cn, weight, draw_key(m, DrawSite::ReadWeights), ReadLayout{V, D, 1}, WeightUse::Lookup)
          .contiguous();
  Tensor y = Tensor::zeros({1, P, D}, weight.device());
  be.index_gather(cn.out(), idx, wr.view({1, V, D}), y, draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));
  hook_output(m, n, y);
  Shape y_shape = ids.shape();
  y_shape.push_back(D);
  Tensor result = y.view(y_shape);

  const Module* mp = &m;
  record_lambda(result, "embedding", {weight}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad)).view({1, P, D});
    // g (1, P, D) -> gw (1, V, D): per row, the sum over the positions that looked it up, ascending.
    Tensor gw = Tensor::zeros({1, V, D}, gy.device());
    be.index_sum(sum_mac(cn), idx, padding_idx, g, gw, draw_key(*mp, DrawSite::GradWeight));
    finish_grad(n, gw, draw_key(*mp, DrawSite::GradWeight));
    return {gw.view({V, D})};
  });
  return result;
}

}  // namespace emu
