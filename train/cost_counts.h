// The counts of `emutrain cost` (docs/cost.md): what one training step or one
// inference pass does, per layer, as exact integers.
//
//   CostCounts c;                       // filled by CountingBackend (train/cost_backend.h)
//   c.add({"fc1", Phase::Forward, Category::Mac, "fp32", "fp32", "fp32", "exact"}, 48000);
//   c.total(Category::Mac)              // 48000
//
// One flat table of (key -> count) rather than a struct per layer: every
// category is then summed, filtered, priced and printed by the same code.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace emu::train {

enum class Phase : uint8_t { Forward, Backward, Update };
const char* phase_name(Phase p);

// What a count counts. The meaning of the key's strings a, b, c, mode per category:
//   Mac        multiply-accumulates performed (terms of the ops' reductions, less the products an
//              N:M mask drops): a, b the operand read formats, c the accumulator, mode the product
//              ("exact", the product format, or "lut:<model>:<format>" for an approximate multiplier)
//   MacMasked  the terms an N:M mask dropped (not performed; same key fields as Mac)
//   Add        additions of plain sums (bias gradients, pooling, softmax sums): c the accumulator
//   Op         element-wise operations: mode the kind (add, mul, div, sqrt, cmp), c the format
//   Function   non-linear function evaluations: mode the function ("exp", "tanh", ...), a "exact"
//              or "pwl:<K>", c the format of the result
//   Read       bits read: mode the tensor class (weights, activations, grads, state), c the format
//   Write      bits written: as Read
//   Meta       metadata bits read: mode the kind (block_scale, nm_index, csr_index)
enum class Category : uint8_t { Mac, MacMasked, Add, Op, Function, Read, Write, Meta };
const char* category_name(Category c);

struct CountKey {
  std::string layer;  // module path ("" for the model itself; "(optimizer)", "(autograd)" ...)
  Phase phase = Phase::Forward;
  Category category = Category::Mac;
  std::string a, b, c, mode;
  bool operator<(const CountKey& o) const {
    return std::tie(layer, phase, category, a, b, c, mode) <
           std::tie(o.layer, o.phase, o.category, o.a, o.b, o.c, o.mode);
  }
};

class CostCounts {
 public:
  void add(const CountKey& key, int64_t n);
  const std::map<CountKey, int64_t>& entries() const { return entries_; }
  // Sum of the counts whose key passes `keep` (all when empty).
  int64_t sum(const std::function<bool(const CountKey&)>& keep = {}) const;
  int64_t total(Category c) const;
  int64_t total(Category c, Phase p) const;
  int64_t layer_total(const std::string& layer, Category c, Phase p) const;
  // Layers in the order first counted (the order the step ran them).
  const std::vector<std::string>& layers() const { return layers_; }
  // Ops the backend ran that have no count (docs/cost.md lists them), with how often.
  std::map<std::string, int64_t> uncounted;
  // Counts of another pass added into this one (layer order kept).
  void merge(const CostCounts& other);

 private:
  std::map<CountKey, int64_t> entries_;
  std::vector<std::string> layers_;
};

}  // namespace emu::train
