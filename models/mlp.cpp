// A small multi-layer perceptron for tests and quick experiments: the input
// "x" (N, ...) is flattened to (N, F) and passed through
//   fc0 F -> hidden[0]  act0 [drop0]  fc1 hidden[0] -> hidden[1] ...  fc<k> -> classes
// F is the product of the dataset's sizes (channels*height*width for images,
// length*channels for series, or features).
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "layers/activation.h"
#include "layers/dropout.h"
#include "layers/linear.h"
#include "layers/shape_ops.h"
#include "models/registry.h"

namespace emu::models {
namespace {

int64_t input_features(const DataMeta& meta) {
  auto get = [&](const char* k) -> int64_t {
    auto it = meta.find(k);
    return it == meta.end() ? 0 : it->second;
  };
  if (get("height") > 0 && get("width") > 0)
    return std::max<int64_t>(get("channels"), 1) * get("height") * get("width");
  if (get("length") > 0) return std::max<int64_t>(get("channels"), 1) * get("length");
  if (get("features") > 0) return get("features");
  return meta_at(meta, "features", "mlp");  // throws, naming what the dataset gives
}

class Mlp : public Model {
 public:
  Mlp(int64_t in, const std::vector<int64_t>& hidden, int64_t classes, const std::string& act,
      double dropout) {
    int64_t width = in;
    for (size_t i = 0; i <= hidden.size(); ++i) {
      const bool last = i == hidden.size();
      const int64_t out = last ? classes : hidden[i];
      auto fc = register_module("fc" + std::to_string(i), std::make_shared<Linear>(width, out));
      layers_.push_back(fc.get());
      forwards_.push_back([fc](const Tensor& x) { return fc->forward(x); });
      if (!last) {
        std::shared_ptr<UnaryModule> a;
        if (act == "tanh")
          a = std::make_shared<Tanh>();
        else if (act == "gelu")
          a = std::make_shared<GELU>();
        else
          a = std::make_shared<ReLU>();
        register_module("act" + std::to_string(i), a);
        layers_.push_back(a.get());
        forwards_.push_back([a](const Tensor& x) { return a->forward(x); });
        if (dropout > 0) {
          auto d = register_module("drop" + std::to_string(i),
                                   std::make_shared<Dropout>(static_cast<float>(dropout)));
          layers_.push_back(d.get());
          forwards_.push_back([d](const Tensor& x) { return d->forward(x); });
        }
      }
      width = out;
    }
  }

  Prediction predict(const data::Batch& batch, const std::string&) override {
    Tensor x = flatten(batch.at("x"));
    for (size_t i = 0; i < layers_.size(); ++i) x = probe(*layers_[i], forwards_[i](x));
    return {x, example_targets(batch)};
  }

  std::string type_name() const override { return "Mlp"; }

 private:
  std::vector<Module*> layers_;  // owned as registered children
  std::vector<std::function<Tensor(const Tensor&)>> forwards_;
};

std::shared_ptr<Model> make_mlp(const config::Args& args, const DataMeta& meta) {
  return std::make_shared<Mlp>(input_features(meta), args.integers("hidden"), meta_at(meta, "classes", "mlp"),
                               args.string("activation"), args.number("dropout"));
}

}  // namespace

EMU_MODEL(mlp, "multi-layer perceptron over the flattened input (for tests and quick experiments)", make_mlp,
          config::int_list_key("hidden", "[64]", "widths of the hidden layers", 1),
          config::choice_key("activation", "relu", {"relu", "tanh", "gelu"}, "non-linearity between layers"),
          config::number_key("dropout", "0", "dropout probability after each hidden activation", 0, 1));

}  // namespace emu::models
