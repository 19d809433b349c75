// Dataset and Batch: what every loader in data/ produces and what the trainer
// (train/) and the models (models/) consume.
//
// A Batch carries named tensors so one interface serves every model family.
// Field names in use:
//   images       "x" (N,C,H,W) float, "y" (N) class indices as floats
//   time series  "x" (N,T,C), "y" (N)
//   translation  "src" (N,S) token ids, "tgt_in" (N,T) decoder inputs,
//                "tgt_out" (N,T) targets; ids as floats, padding id 0
//   graph        in `sparse`: "x" node features (V,F), "adj" the raw symmetric
//                adjacency (V,V), values 1, no self-loops (GCNConv adds them and
//                normalises); "y" (V), "train_mask"/"val_mask"/"test_mask" (V) 0/1
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/csr.h"
#include "core/tensor.h"

namespace emu::data {

struct Batch {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::shared_ptr<const CsrMatrix>> sparse;
  int64_t size = 0;  // examples in the batch

  // The named field; throws naming the field and the fields present.
  const Tensor& at(const std::string& name) const;
  const CsrMatrix& sparse_at(const std::string& name) const;
  bool has(const std::string& name) const { return tensors.count(name) != 0 || sparse.count(name) != 0; }
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  // Number of examples.
  virtual int64_t size() const = 0;
  // The examples `indices` as one batch, on the CPU. Deterministic: any random
  // augmentation draws Philox keyed by (seed, epoch, example index), never by
  // thread or call order. Called from several DataLoader workers at once, so
  // it must not modify shared state.
  virtual Batch get(const std::vector<int64_t>& indices, uint64_t seed, int64_t epoch) const = 0;
  // Sizes a model is built from, by name: "classes", "channels", "height",
  // "width", "length" (time steps), "features", "src_vocab", "tgt_vocab", ...
  virtual std::map<std::string, int64_t> meta() const = 0;
  // One line for logs: "CIFAR-10 train, 50000 images 3x32x32, 10 classes".
  virtual std::string describe() const = 0;
  // The token of each id of vocabulary `side` ("src", "tgt") for datasets of
  // token ids (to print or score decoded sequences); empty for the others.
  virtual std::vector<std::string> vocab(const std::string& side) const {
    (void)side;
    return {};
  }
};

}  // namespace emu::data
