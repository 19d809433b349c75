// Cora citation graph, LINQS format (https://linqs.org/datasets/#cora):
//   cora.content: one paper per line, tab-separated: paper id, F binary word
//                 features (0/1), class label (a name such as Neural_Networks);
//   cora.cites:   one citation per line: cited paper id <TAB> citing paper id.
// The whole graph is one example (size() == 1). Nodes are numbered in
// cora.content order; classes are the label names sorted bytewise.
// Batch (get({0})):
//   sparse "x"   (V, F) features: raw (values 1) or row-normalised (Kipf &
//                Welling's preprocessing: each row's values 1/nnz(row), one
//                binary32 division; an all-zero row stays empty);
//   sparse "adj" (V, V) symmetric, values 1, duplicates merged, self-citations
//                dropped (GCNConv adds self-loops and normalises itself);
//   "y" (V) class indices; "train_mask", "val_mask", "test_mask" (V) 0/1, and
//   "mask" (V), the mask of the split asked for; Batch::size = that split's node count.
// Split (as in Kipf & Welling's semi-supervised setting, drawn by seed rather
// than fixed): the node ids in the order of philox_permutation(V, split_seed,
// data_stream(Split, 0)); walking it, a node goes to training while its class
// has fewer than train_per_class training nodes; the remaining nodes, in
// permutation order, give the first val_size to validation and the next
// test_size to test.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace emu::data {

struct CoraOptions {
  std::string root;  // folder holding cora.content and cora.cites
  bool row_normalize = true;
  uint64_t split_seed = 0;
  int64_t train_per_class = 20;
  int64_t val_size = 500;
  int64_t test_size = 1000;
  std::string split = "train";  // which mask "mask" is: train, val or test
};

class CoraDataset : public Dataset {
 public:
  struct Graph {
    std::shared_ptr<const CsrMatrix> x, adj;
    std::vector<int64_t> labels;  // V
    std::vector<std::string> class_names;
    std::vector<std::string> paper_ids;     // V, file order
    std::vector<uint8_t> train, val, test;  // V masks
  };
  CoraDataset(Graph graph, const CoraOptions& options);
  int64_t size() const override { return 1; }
  Batch get(const std::vector<int64_t>& indices, uint64_t seed, int64_t epoch) const override;
  // nodes, features, classes, edges (undirected), train_nodes, val_nodes, test_nodes
  std::map<std::string, int64_t> meta() const override;
  std::string describe() const override;
  const Graph& graph() const { return graph_; }

 private:
  Graph graph_;
  CoraOptions options_;
};

std::unique_ptr<CoraDataset> load_cora(const CoraOptions& options);

}  // namespace emu::data
