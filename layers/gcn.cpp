#include "layers/gcn.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "layers/init.h"
#include "layers/linear.h"
#include "layers/sparse_matmul.h"

namespace emu {

GCNConv::GCNConv(int64_t in, int64_t out, GCNConvOptions opts)
    : in_channels(in), out_channels(out), options(opts) {
  if (in <= 0 || out <= 0)
    throw std::invalid_argument(fmt::format("GCNConv({}, {}): sizes must be positive", in, out));
  weight = register_parameter("weight", Tensor::zeros({out, in}));
  if (options.bias) bias = register_parameter("bias", Tensor::zeros({out}));
}

void GCNConv::reset_parameters() {
  // Initialisation only (no emulated value): host sqrt is fine here, as in Linear.
  const float bound = std::sqrt(6.0f / static_cast<float>(in_channels + out_channels));
  init_uniform(*this, weight, bound, 0);
  if (bias.defined()) bias.fill(0.0f);
}

std::shared_ptr<const CsrMatrix> GCNConv::propagation(std::shared_ptr<const CsrMatrix> adjacency) {
  if (!adjacency) throw std::invalid_argument(fmt::format("{}: GCNConv: the adjacency is null", path()));
  if (options.cached && cache_) {
    if (adjacency->rows != cache_->rows || adjacency->cols != cache_->cols)
      throw std::invalid_argument(fmt::format("{}: GCNConv(cached): adjacency {} x {} after a cached {} x {}",
                                              path(), adjacency->rows, adjacency->cols, cache_->rows,
                                              cache_->cols));
    // The cached constants follow the adjacency to its device (a model moved after the first call).
    if (cache_->values.device() != adjacency->values.device())
      cache_ = std::make_shared<const CsrMatrix>(
          csr_with_values(*cache_, cache_->values.to(adjacency->values.device())));
    return cache_;
  }
  if (adjacency->rows != adjacency->cols)
    throw std::invalid_argument(fmt::format("{}: GCNConv: the adjacency is {} x {}, not square", path(),
                                            adjacency->rows, adjacency->cols));
  std::shared_ptr<const CsrMatrix> p =
      options.normalize ? std::make_shared<const CsrMatrix>(gcn_normalize(*adjacency)) : adjacency;
  if (options.cached) cache_ = p;
  return p;
}

Tensor GCNConv::aggregate(const Tensor& h, std::shared_ptr<const CsrMatrix> adjacency) {
  std::shared_ptr<const CsrMatrix> p = propagation(std::move(adjacency));
  if (p->cols != h.dim(0))
    throw std::invalid_argument(
        fmt::format("{}: GCNConv: {} nodes in the features, {} in the adjacency", path(), h.dim(0), p->cols));
  return sparse_matmul(*this, p, h, bias, SparseOperands::ConstantTimesInput, 1);
}

Tensor GCNConv::forward(const Tensor& x, std::shared_ptr<const CsrMatrix> adjacency) {
  if (x.ndim() != 2 || x.dim(1) != in_channels)
    throw std::invalid_argument(fmt::format("{}: GCNConv: features of shape {}, expected (nodes, {})", path(),
                                            shape_string(x.shape()), in_channels));
  return aggregate(linear(*this, x, weight, Tensor()), std::move(adjacency));
}

Tensor GCNConv::forward(std::shared_ptr<const CsrMatrix> x, std::shared_ptr<const CsrMatrix> adjacency) {
  if (!x || x->cols != in_channels)
    throw std::invalid_argument(fmt::format("{}: GCNConv: sparse features with {} columns, expected {}",
                                            path(), x ? x->cols : 0, in_channels));
  return aggregate(sparse_linear(*this, std::move(x), weight, Tensor(), 0), std::move(adjacency));
}

Tensor GCNConv::forward(const Tensor& x, const CsrMatrix& adjacency) {
  return forward(x, std::make_shared<const CsrMatrix>(adjacency));
}

Tensor GCNConv::forward(const CsrMatrix& x, const CsrMatrix& adjacency) {
  return forward(std::make_shared<const CsrMatrix>(x), std::make_shared<const CsrMatrix>(adjacency));
}

}  // namespace emu
