// ResNet-18 for CIFAR-sized images (He et al. 2016, in the form of the common
// CIFAR reference implementations): a 3x3 stem instead of the ImageNet 7x7
// stride-2 convolution and max-pool, so 32x32 inputs keep their resolution.
//   conv1 3x3 (C -> 64) bn1 relu                      (N, 64, 32, 32)
//   layer1: 2 BasicBlocks 64,  stride 1                (N, 64, 32, 32)
//   layer2: 2 BasicBlocks 128, stride 2 (first block)  (N, 128, 16, 16)
//   layer3: 2 BasicBlocks 256, stride 2                (N, 256, 8, 8)
//   layer4: 2 BasicBlocks 512, stride 2                (N, 512, 4, 4)
//   pool (global average)  fc 512 -> classes
// BasicBlock: conv1 3x3 (stride) bn1 relu1 conv2 3x3 bn2, plus the shortcut
// (identity, or 1x1 conv (stride) + bn as "downsample.0"/"downsample.1" where
// the shape changes), add, relu2. Convolutions have no bias (batch norm
// follows). Names follow torchvision, so overrides such as
// "layer4.*.conv2" read as usual. `width` scales every stage (64 = standard).
#include "layers/activation.h"
#include "layers/batchnorm.h"
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/pool.h"
#include "layers/sequential.h"
#include "layers/shape_ops.h"
#include "models/registry.h"

namespace emu::models {
namespace {

class BasicBlock : public Module {
 public:
  BasicBlock(int64_t in, int64_t out, int stride) {
    conv1 = register_module("conv1", std::make_shared<Conv2d>(in, out, 3, stride, 1, 1, false));
    bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(out));
    relu1 = register_module("relu1", std::make_shared<ReLU>());
    conv2 = register_module("conv2", std::make_shared<Conv2d>(out, out, 3, 1, 1, 1, false));
    bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(out));
    if (stride != 1 || in != out) {
      down_conv = std::make_shared<Conv2d>(in, out, 1, stride, 0, 1, false);
      down_bn = std::make_shared<BatchNorm2d>(out);
      register_module("downsample", std::make_shared<Sequential>(down_conv, down_bn));
    }
    add = register_module("add", std::make_shared<Add>());
    relu2 = register_module("relu2", std::make_shared<ReLU>());
  }

  // x: (N, in, H, W) -> (N, out, H / stride, W / stride); `probe` sees each output.
  template <class Probe>
  Tensor forward(const Tensor& x, Probe&& probe) {
    Tensor h = probe(*conv1, conv1->forward(x));
    h = probe(*bn1, bn1->forward(h));
    h = probe(*relu1, relu1->forward(h));
    h = probe(*conv2, conv2->forward(h));
    h = probe(*bn2, bn2->forward(h));
    Tensor s = x;
    if (down_conv) {
      s = probe(*down_conv, down_conv->forward(x));
      s = probe(*down_bn, down_bn->forward(s));
    }
    h = probe(*add, add->forward(h, s));
    return probe(*relu2, relu2->forward(h));
  }

  std::string type_name() const override { return "BasicBlock"; }

 private:
  std::shared_ptr<Conv2d> conv1, conv2, down_conv;
  std::shared_ptr<BatchNorm2d> bn1, bn2, down_bn;
  std::shared_ptr<ReLU> relu1, relu2;
  std::shared_ptr<Add> add;
};

class ResNet18 : public Model {
 public:
  ResNet18(int64_t channels, int64_t classes, int64_t width) {
    conv1 = register_module("conv1", std::make_shared<Conv2d>(channels, width, 3, 1, 1, 1, false));
    bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(width));
    relu = register_module("relu", std::make_shared<ReLU>());
    int64_t in = width;
    for (int stage = 0; stage < 4; ++stage) {
      const int64_t out = width << stage;
      auto layer = std::make_shared<Module>();
      register_module("layer" + std::to_string(stage + 1), layer);
      for (int b = 0; b < 2; ++b) {
        auto block = std::make_shared<BasicBlock>(in, out, stage > 0 && b == 0 ? 2 : 1);
        layer->register_module(std::to_string(b), block);
        blocks.push_back(block);
        in = out;
      }
    }
    pool = register_module("pool", std::make_shared<AdaptiveAvgPool2d>(1));
    fc = register_module("fc", std::make_shared<Linear>(in, classes));
  }

  Prediction predict(const data::Batch& batch, const std::string&) override {
    auto p = [this](const Module& m, const Tensor& y) -> Tensor { return probe(m, y); };
    Tensor x = batch.at("x");
    x = p(*conv1, conv1->forward(x));
    x = p(*bn1, bn1->forward(x));
    x = p(*relu, relu->forward(x));
    for (auto& block : blocks) x = block->forward(x, p);
    x = p(*pool, pool->forward(x));
    x = p(*fc, fc->forward(flatten(x)));
    return {x, example_targets(batch)};
  }

  std::string type_name() const override { return "ResNet18"; }

 private:
  std::shared_ptr<Conv2d> conv1;
  std::shared_ptr<BatchNorm2d> bn1;
  std::shared_ptr<ReLU> relu;
  std::vector<std::shared_ptr<BasicBlock>> blocks;
  std::shared_ptr<AdaptiveAvgPool2d> pool;
  std::shared_ptr<Linear> fc;
};

std::shared_ptr<Model> make_resnet18(const config::Args& args, const DataMeta& meta) {
  return std::make_shared<ResNet18>(meta_at(meta, "channels", "resnet18"),
                                    meta_at(meta, "classes", "resnet18"), args.integer("width"));
}

}  // namespace

EMU_MODEL(resnet18,
          "CIFAR ResNet-18: 3x3 stem (no max-pool), 4 stages of 2 BasicBlocks (64/128/256/512), avg pool, fc",
          make_resnet18,
          config::int_key("width", "64", "channels of the first stage (doubled per stage)", 1, 4096));

}  // namespace emu::models
