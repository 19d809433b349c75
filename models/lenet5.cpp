// LeNet-5 (LeCun et al. 1998) for 28x28 digits, in its common modern form:
//   conv1 5x5 pad 2 (C -> 6)  act  pool 2x2    (N, 6, 28, 28) -> (N, 6, 14, 14)
//   conv2 5x5       (6 -> 16) act  pool 2x2    -> (N, 16, 10, 10) -> (N, 16, 5, 5)
//   fc1 400 -> 120  act   fc2 120 -> 84  act   fc3 84 -> classes
// The original's scaled tanh, trainable average pooling and partial C3
// connection table are replaced by ReLU, max-pooling and full connections
// (recipe arguments activation: tanh and pool: avg give the closer variant);
// the RBF output layer is a plain linear layer under cross-entropy.
// Other input sizes work when (H/2 - 4)/2 and (W/2 - 4)/2 are positive.
#include <fmt/format.h>

#include "layers/activation.h"
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/pool.h"
#include "layers/shape_ops.h"
#include "models/registry.h"

namespace emu::models {
namespace {

std::shared_ptr<UnaryModule> make_activation(const std::string& kind) {
  if (kind == "tanh") return std::make_shared<Tanh>();
  return std::make_shared<ReLU>();
}

class LeNet5 : public Model {
 public:
  LeNet5(int64_t channels, int64_t height, int64_t width, int64_t classes, const std::string& act,
         const std::string& pool) {
    const int64_t h = (height / 2 - 4) / 2, w = (width / 2 - 4) / 2;
    if (h <= 0 || w <= 0)
      throw std::invalid_argument(
          fmt::format("lenet5: input {}x{} is too small (want at least 12x12)", height, width));
    auto pooling = [&]() -> std::shared_ptr<Module> {
      if (pool == "avg") return std::make_shared<AvgPool2d>(2);
      return std::make_shared<MaxPool2d>(2);
    };
    conv1 = register_module("conv1", std::make_shared<Conv2d>(channels, 6, 5, 1, 2));
    act1 = register_module("act1", make_activation(act));
    pool1 = register_module("pool1", pooling());
    conv2 = register_module("conv2", std::make_shared<Conv2d>(6, 16, 5));
    act2 = register_module("act2", make_activation(act));
    pool2 = register_module("pool2", pooling());
    fc1 = register_module("fc1", std::make_shared<Linear>(16 * h * w, 120));
    act3 = register_module("act3", make_activation(act));
    fc2 = register_module("fc2", std::make_shared<Linear>(120, 84));
    act4 = register_module("act4", make_activation(act));
    fc3 = register_module("fc3", std::make_shared<Linear>(84, classes));
  }

  Prediction predict(const data::Batch& batch, const std::string&) override {
    Tensor x = batch.at("x");
    x = probe(*conv1, conv1->forward(x));
    x = probe(*act1, act1->forward(x));
    x = probe(*pool1, pool_forward(*pool1, x));
    x = probe(*conv2, conv2->forward(x));
    x = probe(*act2, act2->forward(x));
    x = probe(*pool2, pool_forward(*pool2, x));
    x = flatten(x);
    x = probe(*fc1, fc1->forward(x));
    x = probe(*act3, act3->forward(x));
    x = probe(*fc2, fc2->forward(x));
    x = probe(*act4, act4->forward(x));
    x = probe(*fc3, fc3->forward(x));
    return {x, example_targets(batch)};
  }

  std::string type_name() const override { return "LeNet5"; }

 private:
  static Tensor pool_forward(Module& m, const Tensor& x) {
    if (auto* p = dynamic_cast<MaxPool2d*>(&m)) return p->forward(x);
    return static_cast<AvgPool2d&>(m).forward(x);
  }

  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<UnaryModule> act1, act2, act3, act4;
  std::shared_ptr<Module> pool1, pool2;
  std::shared_ptr<Linear> fc1, fc2, fc3;
};

std::shared_ptr<Model> make_lenet5(const config::Args& args, const DataMeta& meta) {
  return std::make_shared<LeNet5>(meta_at(meta, "channels", "lenet5"), meta_at(meta, "height", "lenet5"),
                                  meta_at(meta, "width", "lenet5"), meta_at(meta, "classes", "lenet5"),
                                  args.string("activation"), args.string("pool"));
}

}  // namespace

EMU_MODEL(lenet5, "LeNet-5 for 28x28 images: conv5(pad 2) 6, pool, conv5 16, pool, fc 120, fc 84, fc classes",
          make_lenet5,
          config::choice_key("activation", "relu", {"relu", "tanh"},
                             "non-linearity after each conv and hidden fc"),
          config::choice_key("pool", "max", {"max", "avg"}, "2x2 pooling after each conv"));

}  // namespace emu::models
