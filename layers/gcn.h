// GCNConv: the graph convolution of Kipf & Welling (ICLR 2017), as PyTorch
// Geometric's GCNConv computes it:
//   y = Â (x W^T) + b,   Â = D^-1/2 (A + I) D^-1/2 (gcn_normalize, core/csr.h)
//   x: (V, in) dense, or a (V x in) CSR matrix of sparse features (no gradient);
//   adjacency: (V x V) CSR, row i = the sources aggregated into node i, raw (the
//   layer adds self-loops and normalises; data/dataset.h's "adj");
//   weight: (out, in), bias: (out) -> y: (V, out)
//
// Order of the arithmetic (docs/layers_graph.md):
//   1. transform  h = x W^T: dense x through linear() (reduction over the
//      in-feature), sparse x through sparse_linear (over the stored features,
//      ascending); h is rounded to `out`;
//   2. aggregate  y = Â h + b: one reduction per output over the row's
//      neighbours in ascending source id, the self-loop in its place, then the
//      bias added once, inside that reduction (acc = R(acc + b), y = R_out(acc)).
// Â's coefficients are read in the `weights` format (a constant of the layer),
// h in `activations`. Draw streams: the transform uses the layer's sites at
// stage 0, the aggregation at stage 1 (sparse_matmul's `stage`).
#pragma once

#include <memory>

#include "core/csr.h"
#include "core/module.h"

namespace emu {

struct GCNConvOptions {
  bool bias = true;
  // Normalise the adjacency once, at the first forward, and reuse it for every
  // later call (PyG's cached=True: one graph, transductive training). A later
  // adjacency of another size is an error.
  bool cached = false;
  // false: the adjacency is used as given (already normalised by the caller).
  bool normalize = true;
};

class GCNConv : public Module {
 public:
  GCNConv(int64_t in_channels, int64_t out_channels, GCNConvOptions options = {});

  Tensor forward(const Tensor& x, std::shared_ptr<const CsrMatrix> adjacency);
  Tensor forward(std::shared_ptr<const CsrMatrix> x, std::shared_ptr<const CsrMatrix> adjacency);
  Tensor forward(const Tensor& x, const CsrMatrix& adjacency);
  Tensor forward(const CsrMatrix& x, const CsrMatrix& adjacency);

  // The propagation matrix used for `adjacency`: Â (or the adjacency itself
  // without normalize); the cached one when cached and computed before.
  std::shared_ptr<const CsrMatrix> propagation(std::shared_ptr<const CsrMatrix> adjacency);
  void clear_cache() { cache_.reset(); }

  // Glorot-uniform weight (bound sqrt(6 / (in + out))) and a zero bias, as PyG.
  void reset_parameters() override;
  std::string type_name() const override { return "GCNConv"; }

  int64_t in_channels, out_channels;
  GCNConvOptions options;
  Tensor weight, bias;  // bias undefined when built without one

 private:
  Tensor aggregate(const Tensor& h, std::shared_ptr<const CsrMatrix> adjacency);
  std::shared_ptr<const CsrMatrix> cache_;
};

}  // namespace emu
