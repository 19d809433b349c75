// The two-layer graph convolutional network of Kipf & Welling (ICLR 2017) for
// transductive node classification (Cora, Citeseer, PubMed):
//   input_dropout -> conv1 GCNConv(F, hidden) -> ReLU -> dropout -> conv2 GCNConv(hidden, classes)
// on the whole graph at once: sparse "x" (V, F) features, sparse "adj" (V, V)
// raw adjacency (GCNConv adds self-loops and normalises it once, cached),
// "y" (V) labels. The prediction covers every node; targets are -1 outside the
// split's node mask (the batch's "mask", else "<split>_mask"), so the trainer's
// loss and accuracy count that split's nodes only.
//
// Dropout on the sparse input: like Kipf's sparse_dropout, each *stored*
// feature value is dropped (or scaled by 1/(1-p)), drawn by the input_dropout
// module's Dropout op over the nnz values, element index = position among the
// stored entries. The matrix keeps its structure (dropped entries are stored
// zeros, which the sparse product skips), so the features stay sparse and the
// first layer costs nnz * hidden multiply-adds. Dense "x" features (V, F) take
// the ordinary dropout.
//
// Weight decay: Kipf penalises the first layer's weights only; the recipe's
// optimizer.weight_decay applies to every parameter (as PyG's and DGL's
// examples that reach the paper's accuracy with one decay for all).
#include "layers/gcn.h"

#include <fmt/format.h>

#include "layers/activation.h"
#include "layers/dropout.h"
#include "models/registry.h"

namespace emu::models {
namespace {

class Gcn : public Model {
 public:
  Gcn(int64_t features, int64_t hidden, int64_t classes, float dropout, float input_dropout, bool bias) {
    GCNConvOptions o;
    o.bias = bias;
    o.cached = true;  // one graph: normalise its adjacency once
    input_drop = register_module("input_dropout", std::make_shared<Dropout>(input_dropout));
    conv1 = register_module("conv1", std::make_shared<GCNConv>(features, hidden, o));
    act = register_module("act", std::make_shared<ReLU>());
    drop = register_module("dropout", std::make_shared<Dropout>(dropout));
    conv2 = register_module("conv2", std::make_shared<GCNConv>(hidden, classes, o));
  }

  Prediction predict(const data::Batch& batch, const std::string& split) override {
    auto adj_it = batch.sparse.find("adj");
    if (adj_it == batch.sparse.end())
      throw std::invalid_argument(
          "gcn: the batch has no sparse 'adj' (a graph dataset such as cora gives one)");
    const std::shared_ptr<const CsrMatrix>& adj = adj_it->second;
    Tensor h;
    auto x_it = batch.sparse.find("x");
    if (x_it != batch.sparse.end()) {
      h = probe(*conv1, conv1->forward(sparse_input_dropout(x_it->second), adj));
    } else {
      Tensor x = probe(*input_drop, input_drop->forward(batch.at("x")));
      h = probe(*conv1, conv1->forward(x, adj));
    }
    h = probe(*act, act->forward(h));
    h = probe(*drop, drop->forward(h));
    h = probe(*conv2, conv2->forward(h, adj));
    return {h, node_targets(batch, split)};
  }

  std::string type_name() const override { return "GCN"; }

  std::shared_ptr<Dropout> input_drop, drop;
  std::shared_ptr<GCNConv> conv1, conv2;
  std::shared_ptr<ReLU> act;

 private:
  // The features with input_drop's dropout applied to their stored values.
  std::shared_ptr<const CsrMatrix> sparse_input_dropout(const std::shared_ptr<const CsrMatrix>& x) {
    if (!input_drop->is_training() || input_drop->p == 0.0f) return x;
    Tensor values = dropout(*input_drop, x->values, input_drop->p, true);
    return std::make_shared<const CsrMatrix>(csr_with_values(*x, values));
  }

  // y with -1 for the nodes outside the split's mask.
  static Tensor node_targets(const data::Batch& batch, const std::string& split) {
    const Tensor& y = batch.at("y");
    const std::string mask_name = batch.tensors.count("mask") ? "mask" : split + "_mask";
    const Tensor& mask = batch.at(mask_name);
    if (y.ndim() != 1 || mask.shape() != y.shape())
      throw std::invalid_argument(fmt::format("gcn: 'y' {} and '{}' {} must both be (V)",
                                              shape_string(y.shape()), mask_name,
                                              shape_string(mask.shape())));
    // Built on the host from the downloaded labels and mask, then put on the labels' device.
    const std::vector<float> py = y.to_vector(), pm = mask.to_vector();
    std::vector<float> t(py.size());
    for (size_t i = 0; i < t.size(); ++i) t[i] = pm[i] != 0.0f ? py[i] : -1.0f;
    return Tensor::from_vector(y.shape(), t, y.device());
  }
};

std::shared_ptr<Model> make_gcn(const config::Args& args, const DataMeta& meta) {
  return std::make_shared<Gcn>(meta_at(meta, "features", "gcn"), args.integer("hidden"),
                               meta_at(meta, "classes", "gcn"), static_cast<float>(args.number("dropout")),
                               static_cast<float>(args.number("input_dropout")), args.flag("bias"));
}

}  // namespace

EMU_MODEL(
    gcn, "2-layer GCN (Kipf & Welling): dropout, GCNConv(F, hidden), ReLU, dropout, GCNConv(hidden, classes)",
    make_gcn, config::int_key("hidden", "16", "hidden units of the first GCN layer", 1),
    config::number_key("dropout", "0.5", "dropout on the hidden layer's output", 0, 1),
    config::number_key("input_dropout", "0.5",
                       "dropout on the input features (on the stored values if sparse)", 0, 1),
    config::bool_key("bias", "true", "GCNConv bias (PyG's default; Kipf's reference code has none)"));

}  // namespace emu::models
