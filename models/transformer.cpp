// The Keras time-series Transformer (keras.io/examples/timeseries/
// timeseries_classification_transformer, the FordA example):
//   x (N, T, C)
//   num_blocks x pre-norm encoder block (layers/transformer.h, norm_first):
//       a = x + dropout(MHA(LN(x)))            LN eps 1e-6; MHA: num_heads heads of head_size
//                                              (Keras key_dim), dropout on the attention weights
//       y = a + conv2(dropout(relu(conv1(LN(a)))))
//     conv1 / conv2 are Keras' Conv1D(kernel_size=1) layers, C -> ff_dim -> C: a
//     kernel-1 convolution over (N, T, C) is a Linear on the last dimension, which
//     is what the block's linear1 / linear2 compute (same weights up to layout).
//   pooling (pool: features, the example's GlobalAveragePooling1D(data_format=
//     "channels_first")): Keras then reads (N, T, C) as (batch, channels, steps),
//     so the mean runs over the C features of each time step -> (N, T). (With
//     FordA's single channel this is a reshape.) pool: time averages over the
//     time steps instead -> (N, C), the usual global average pooling.
//   MLP: for each width u of mlp_units: Linear -> ReLU -> Dropout(mlp_dropout)
//   Linear -> classes (logits; the trainer's cross-entropy is Keras' softmax +
//   sparse categorical cross-entropy).
// Differences from Keras: weights start from PyTorch's default initialisation
// (the layers' reset_parameters), not Glorot-uniform.
#include "layers/transformer.h"

#include <fmt/format.h>

#include "layers/activation.h"
#include "layers/dropout.h"
#include "layers/linear.h"
#include "layers/temporal_pool.h"
#include "models/registry.h"

namespace emu::models {
namespace {

struct TransformerConfig {
  int64_t channels = 1, length = 0, classes = 2;
  int64_t num_blocks = 4, head_size = 256, num_heads = 4, ff_dim = 4;
  float dropout = 0.25f, mlp_dropout = 0.4f, eps = 1e-6f;
  std::vector<int64_t> mlp_units{128};
  bool pool_features = true;  // pool: features (Keras channels_first) or time
};

class TimeSeriesTransformer : public Model {
 public:
  explicit TimeSeriesTransformer(const TransformerConfig& c) : config_(c) {
    TransformerBlockOptions o;
    o.embed_dim = c.channels;
    o.num_heads = c.num_heads;
    o.head_dim = c.head_size;
    o.ff_dim = c.ff_dim;
    o.dropout = c.dropout;
    o.norm_first = true;
    o.eps = c.eps;
    o.activation = Activation::Relu;
    for (int64_t b = 0; b < c.num_blocks; ++b)
      blocks_.push_back(
          register_module(fmt::format("block{}", b), std::make_shared<TransformerEncoderBlock>(o)));
    // On (N, T, C): dim 2 averages the C features of each step, dim 1 the T steps.
    pool_ = register_module("pool", std::make_shared<TemporalAvgPool>(c.pool_features ? 2 : 1));
    int64_t width = c.pool_features ? c.length : c.channels;
    for (size_t i = 0; i < c.mlp_units.size(); ++i) {
      mlp_.push_back(
          register_module(fmt::format("mlp{}", i), std::make_shared<Linear>(width, c.mlp_units[i])));
      mlp_act_.push_back(register_module(fmt::format("mlp_act{}", i), std::make_shared<ReLU>()));
      mlp_drop_.push_back(
          register_module(fmt::format("mlp_drop{}", i), std::make_shared<Dropout>(c.mlp_dropout)));
      width = c.mlp_units[i];
    }
    head_ = register_module("head", std::make_shared<Linear>(width, c.classes));
  }

  Prediction predict(const data::Batch& batch, const std::string&) override {
    Tensor x = batch.at("x");
    if (x.ndim() != 3 || x.dim(2) != config_.channels ||
        (config_.pool_features && x.dim(1) != config_.length))
      throw std::invalid_argument(fmt::format("transformer: input 'x' of shape {}, expected (N, {}, {})",
                                              shape_string(x.shape()), config_.length, config_.channels));
    for (auto& b : blocks_) x = probe(*b, b->forward(x));
    x = probe(*pool_, pool_->forward(x));
    for (size_t i = 0; i < mlp_.size(); ++i) {
      x = probe(*mlp_[i], mlp_[i]->forward(x));
      x = probe(*mlp_act_[i], mlp_act_[i]->forward(x));
      x = probe(*mlp_drop_[i], mlp_drop_[i]->forward(x));
    }
    x = probe(*head_, head_->forward(x));
    return {x, example_targets(batch)};
  }

  std::string type_name() const override { return "TimeSeriesTransformer"; }

 private:
  TransformerConfig config_;
  std::vector<std::shared_ptr<TransformerEncoderBlock>> blocks_;
  std::shared_ptr<TemporalAvgPool> pool_;
  std::vector<std::shared_ptr<Linear>> mlp_;
  std::vector<std::shared_ptr<ReLU>> mlp_act_;
  std::vector<std::shared_ptr<Dropout>> mlp_drop_;
  std::shared_ptr<Linear> head_;
};

std::shared_ptr<Model> make_transformer(const config::Args& args, const DataMeta& meta) {
  TransformerConfig c;
  c.channels = meta_at(meta, "channels", "transformer");
  c.length = meta_at(meta, "length", "transformer");
  c.classes = meta_at(meta, "classes", "transformer");
  c.num_blocks = args.integer("num_blocks");
  c.head_size = args.integer("head_size");
  c.num_heads = args.integer("num_heads");
  c.ff_dim = args.integer("ff_dim");
  c.dropout = static_cast<float>(args.number("dropout"));
  c.mlp_units = args.integers("mlp_units");
  c.mlp_dropout = static_cast<float>(args.number("mlp_dropout"));
  c.eps = static_cast<float>(args.number("eps"));
  c.pool_features = args.string("pool") == "features";
  return std::make_shared<TimeSeriesTransformer>(c);
}

}  // namespace

EMU_MODEL(
    transformer,
    "the Keras time-series Transformer (FordA example): pre-norm encoder blocks, global average pooling, MLP",
    make_transformer, config::int_key("num_blocks", "4", "encoder blocks", 0),
    config::int_key("head_size", "256", "features per attention head (Keras key_dim)", 1),
    config::int_key("num_heads", "4", "attention heads", 1),
    config::int_key("ff_dim", "4", "width of the kernel-1 convolution inside each block", 1),
    config::number_key("dropout", "0.25",
                       "dropout on the attention weights, after attention and in the feed-forward part", 0,
                       1),
    config::int_list_key("mlp_units", "[128]", "widths of the MLP's hidden layers", 1),
    config::number_key("mlp_dropout", "0.4", "dropout after each MLP hidden layer", 0, 1),
    config::number_key("eps", "1e-6", "LayerNorm epsilon (Keras example: 1e-6)", 0),
    config::choice_key(
        "pool", "features", {"features", "time"},
        "features: Keras' GlobalAveragePooling1D(channels_first), the mean over the features of "
        "each step -> (N, T); time: the mean over the steps -> (N, C)"));

}  // namespace emu::models
