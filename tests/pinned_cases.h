// The fixed training cases of the pinned-bits test (tests/test_pinned_training.cpp),
// shared with the device-engine test (tests/test_device_engine.cpp): every recipe
// model family (LeNet-5, a narrow ResNet-18, the time-series Transformer, the CRNN
// with LSTM and with GRU, the GCN, an MLP) with a fixed synthetic batch built on
// the CPU, and five numerics policies (fp32 pass-through; e6m6 with fp32
// accumulation; stochastic rounding with a chunked narrow accumulator and e5m2
// gradients; MX block reads with 2:4 weight sparsity; a Mitchell LUT multiplier).
// Moving this code here changed no digest: the values are built exactly as before.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/csr.h"
#include "core/numerics_policy.h"
#include "data/dataset.h"
#include "models/model.h"
#include "tests/test_util.h"

namespace emu::test::pinned {

inline float wave(int64_t i) {  // a deterministic value in [-1, 1) without libm
  const int64_t r = (i * 7919 + 13) % 2003;
  return static_cast<float>(r - 1001) / 1002.0f;
}

inline Tensor pattern(const Shape& shape, int64_t salt) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = wave(i + salt * 100003);
  return Tensor::from_vector(shape, v);
}

inline Tensor labels(int64_t n, int64_t classes) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>((i * 5 + 1) % classes));
  return Tensor::from_vector({n}, v);
}

inline data::Batch images(int64_t n, int64_t c, int64_t h, int64_t w, int64_t classes) {
  data::Batch b;
  b.tensors["x"] = pattern({n, c, h, w}, 1);
  b.tensors["y"] = labels(n, classes);
  b.size = n;
  return b;
}

inline data::Batch series(int64_t n, int64_t t, int64_t c, int64_t classes) {
  data::Batch b;
  b.tensors["x"] = pattern({n, t, c}, 2);
  b.tensors["y"] = labels(n, classes);
  b.size = n;
  return b;
}

// Three sentence pairs with the fra_eng fields, padded (source lengths 5, 3, 2).
inline data::Batch pairs() {
  const int64_t N = 3, S = 5, T = 4;
  const std::vector<float> src = {5, 6, 7, 8, 3, 12, 4, 3, 0, 0, 19, 3, 0, 0, 0};
  const std::vector<float> tin = {1, 9, 10, 11, 1, 13, 0, 0, 1, 14, 5, 0};
  const std::vector<float> tout = {9, 10, 11, 2, 13, 2, 0, 0, 14, 5, 2, 0};
  data::Batch b;
  b.tensors["src"] = Tensor::from_vector({N, S}, src);
  b.tensors["tgt_in"] = Tensor::from_vector({N, T}, tin);
  b.tensors["tgt_out"] = Tensor::from_vector({N, T}, tout);
  b.tensors["src_len"] = Tensor::from_vector({N}, {5, 3, 2});
  b.tensors["tgt_len"] = Tensor::from_vector({N}, {4, 2, 3});
  b.size = N;
  return b;
}

// A 7-node graph: a ring plus two chords, 6 sparse features, 3 classes.
inline data::Batch graph() {
  std::vector<int64_t> r, c;
  auto edge = [&](int64_t a, int64_t b) {
    r.push_back(a), c.push_back(b);
    r.push_back(b), c.push_back(a);
  };
  for (int64_t i = 0; i < 7; ++i) edge(i, (i + 1) % 7);
  edge(0, 3);
  edge(2, 5);
  data::Batch b;
  b.sparse["adj"] = std::make_shared<const CsrMatrix>(csr_from_coo(7, 7, r, c));
  std::vector<int64_t> fr = {0, 0, 1, 2, 2, 3, 4, 5, 5, 6}, fc = {0, 3, 1, 2, 4, 0, 5, 1, 4, 2};
  std::vector<float> fv = {0.5f, 0.5f, 1.0f, 0.5f, 0.5f, 1.0f, 1.0f, 0.5f, 0.5f, 1.0f};
  b.sparse["x"] = std::make_shared<const CsrMatrix>(csr_from_coo(7, 6, fr, fc, fv));
  b.tensors["y"] = Tensor::from_vector({7}, {0, 1, 2, 0, 1, 2, 0});
  b.tensors["mask"] = Tensor::from_vector({7}, {1, 1, 0, 1, 1, 0, 1});
  b.size = 5;
  return b;
}

struct ModelCase {
  const char* name;
  const char* yaml;
  models::DataMeta meta;
  data::Batch (*batch)();
};

inline data::Batch lenet_batch() { return images(3, 1, 28, 28, 10); }
inline data::Batch resnet_batch() { return images(2, 3, 8, 8, 10); }
inline data::Batch series_batch() { return series(3, 10, 3, 4); }
inline data::Batch mlp_batch() { return images(4, 1, 3, 4, 5); }

inline const std::vector<ModelCase>& model_cases() {
  static const std::vector<ModelCase> cases = {
      {"lenet5",
       "{type: lenet5}",
       {{"channels", 1}, {"height", 28}, {"width", 28}, {"classes", 10}},
       lenet_batch},
      {"resnet18", "{type: resnet18, width: 2}", {{"channels", 3}, {"classes", 10}}, resnet_batch},
      {"transformer",
       "{type: transformer, num_blocks: 1, head_size: 4, num_heads: 2, ff_dim: 4, mlp_units: [8]}",
       {{"channels", 3}, {"length", 10}, {"classes", 4}},
       series_batch},
      {"crnn-lstm",
       "{type: crnn, embed_dim: 6, conv_channels: 5, hidden: 4, attention_heads: 2}",
       {{"src_vocab", 20}, {"tgt_vocab", 15}, {"pad_id", 0}},
       pairs},
      {"crnn-gru",
       "{type: crnn, embed_dim: 6, conv_channels: 5, conv_layers: 2, hidden: 4, rnn: gru}",
       {{"src_vocab", 20}, {"tgt_vocab", 15}, {"pad_id", 0}},
       pairs},
      {"gcn", "{type: gcn, hidden: 5}", {{"features", 6}, {"classes", 3}, {"nodes", 7}}, graph},
      {"mlp",
       "{type: mlp, hidden: [7, 6], activation: gelu}",
       {{"channels", 1}, {"height", 3}, {"width", 4}, {"features", 12}, {"classes", 5}},
       mlp_batch},
  };
  return cases;
}

struct PolicyCase {
  const char* name;
  NumericsPolicy (*make)();
};

inline const std::vector<PolicyCase>& policy_cases() {
  static const std::vector<PolicyCase> cases = {
      {"fp32", [] { return NumericsPolicy(); }},
      {"e6m6/fp32",
       [] {
         return test::policy({{"format", "e6m6"}, {"acc", "fp32"}});
       }},
      {"sr-chunked",
       [] {
         return test::policy({{"format", "e5m7"},
                              {"mul", "e6m9"},
                              {"acc", "e8m12:sr"},
                              {"chunk", "3"},
                              {"acc_outer", "fp32"},
                              {"grads", "e5m2:sr"}});
       }},
      {"mx-2:4",
       [] {
         return test::policy({{"weights", "mxfp8_e4m3"}, {"activations", "mxfp8_e5m2"}, {"sparsity", "2:4"}});
       }},
      {"lut-mitchell",
       [] {
         return test::policy({{"mul", "lut:mitchell:e5m7"}, {"acc", "e8m15"}});
       }},
  };
  return cases;
}

}  // namespace emu::test::pinned
