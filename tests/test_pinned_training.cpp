// Pinned training bits: every recipe model (LeNet-5, a narrow ResNet-18, the
// time-series Transformer, the CRNN with LSTM and with GRU, the GCN, an MLP)
// trains two SGD-with-momentum steps on fixed synthetic batches under five
// policies (fp32 pass-through; e6m6 with fp32 accumulation; stochastic rounding
// with a chunked narrow accumulator and e5m2 gradients; MX block reads with 2:4
// weight sparsity; a Mitchell LUT multiplier), on 1, 2 and 3 threads. A 64-bit
// FNV-1a digest of both losses, the final logits and every parameter after each
// step is compared with the digest the code computed before the consolidation
// of issue 14 (one conv, one thread pool, one config module), so a refactor
// that changes one bit anywhere in a forward, backward or update fails here.
// The pinned values are the independent reference: they were recorded from the
// commit before that refactor (23e1217) and must never be regenerated to make
// a change pass; a deliberate change of numerics re-pins them in a commit that
// says which bits changed and why.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/autograd.h"
#include "core/csr.h"
#include "data/registry.h"
#include "optim/sgd.h"
#include "tests/test_models_util.h"
#include "tests/test_util.h"

using namespace emu;

namespace {

struct Fnv64 {
  uint64_t h = 0xcbf29ce484222325ull;
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  }
  void floats(const std::vector<float>& v) { bytes(v.data(), v.size() * sizeof(float)); }
  void text(const std::string& s) { bytes(s.data(), s.size()); }
};

float wave(int64_t i) {  // a deterministic value in [-1, 1) without libm
  const int64_t r = (i * 7919 + 13) % 2003;
  return static_cast<float>(r - 1001) / 1002.0f;
}

Tensor pattern(const Shape& shape, int64_t salt) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = wave(i + salt * 100003);
  return Tensor::from_vector(shape, v);
}

Tensor labels(int64_t n, int64_t classes) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>((i * 5 + 1) % classes));
  return Tensor::from_vector({n}, v);
}

data::Batch images(int64_t n, int64_t c, int64_t h, int64_t w, int64_t classes) {
  data::Batch b;
  b.tensors["x"] = pattern({n, c, h, w}, 1);
  b.tensors["y"] = labels(n, classes);
  b.size = n;
  return b;
}

data::Batch series(int64_t n, int64_t t, int64_t c, int64_t classes) {
  data::Batch b;
  b.tensors["x"] = pattern({n, t, c}, 2);
  b.tensors["y"] = labels(n, classes);
  b.size = n;
  return b;
}

// Three sentence pairs with the fra_eng fields, padded (source lengths 5, 3, 2).
data::Batch pairs() {
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
data::Batch graph() {
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

data::Batch lenet_batch() { return images(3, 1, 28, 28, 10); }
data::Batch resnet_batch() { return images(2, 3, 8, 8, 10); }
data::Batch series_batch() { return series(3, 10, 3, 4); }
data::Batch mlp_batch() { return images(4, 1, 3, 4, 5); }

const std::vector<ModelCase>& model_cases() {
  static const std::vector<ModelCase> cases = {
      {"lenet5", "{type: lenet5}", {{"channels", 1}, {"height", 28}, {"width", 28}, {"classes", 10}}, lenet_batch},
      {"resnet18", "{type: resnet18, width: 2}", {{"channels", 3}, {"classes", 10}}, resnet_batch},
      {"transformer", "{type: transformer, num_blocks: 1, head_size: 4, num_heads: 2, ff_dim: 4, mlp_units: [8]}",
       {{"channels", 3}, {"length", 10}, {"classes", 4}}, series_batch},
      {"crnn-lstm", "{type: crnn, embed_dim: 6, conv_channels: 5, hidden: 4, attention_heads: 2}",
       {{"src_vocab", 20}, {"tgt_vocab", 15}, {"pad_id", 0}}, pairs},
      {"crnn-gru", "{type: crnn, embed_dim: 6, conv_channels: 5, conv_layers: 2, hidden: 4, rnn: gru}",
       {{"src_vocab", 20}, {"tgt_vocab", 15}, {"pad_id", 0}}, pairs},
      {"gcn", "{type: gcn, hidden: 5}", {{"features", 6}, {"classes", 3}, {"nodes", 7}}, graph},
      {"mlp", "{type: mlp, hidden: [7, 6], activation: gelu}", {{"channels", 1}, {"height", 3}, {"width", 4},
       {"features", 12}, {"classes", 5}}, mlp_batch},
  };
  return cases;
}

struct PolicyCase {
  const char* name;
  NumericsPolicy (*make)();
};

const std::vector<PolicyCase>& policy_cases() {
  static const std::vector<PolicyCase> cases = {
      {"fp32", [] { return NumericsPolicy(); }},
      {"e6m6/fp32", [] { return test::policy({{"format", "e6m6"}, {"acc", "fp32"}}); }},
      {"sr-chunked", [] {
         return test::policy({{"format", "e5m7"}, {"mul", "e6m9"}, {"acc", "e8m12:sr"}, {"chunk", "3"},
                              {"acc_outer", "fp32"}, {"grads", "e5m2:sr"}});
       }},
      {"mx-2:4", [] {
         return test::policy({{"weights", "mxfp8_e4m3"}, {"activations", "mxfp8_e5m2"}, {"sparsity", "2:4"}});
       }},
      {"lut-mitchell", [] { return test::policy({{"mul", "lut:mitchell:e5m7"}, {"acc", "e8m15"}}); }},
  };
  return cases;
}

// The digest of two training steps of `mc` under `pc`.
uint64_t train_digest(const ModelCase& mc, const PolicyCase& pc) {
  std::shared_ptr<models::Model> m = test::model_from_yaml(mc.yaml, mc.meta, 7);
  m->apply_numerics(pc.make());
  SgdOptions o;
  o.lr = 0.05f;
  o.momentum = 0.9f;
  SGD opt(m->named_parameters(), o);
  const data::Batch b = mc.batch();
  Fnv64 h;
  m->train();
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    models::Prediction p = m->predict(b, "train");
    Tensor loss = m->loss(p);
    loss.backward();
    opt.step();
    m->context().step += 1;
    REQUIRE(std::isfinite(loss.item()));  // a NaN run would pin little
    h.floats({loss.item()});
    if (step == 1) h.floats(p.logits.to_vector());
    for (const auto& [name, t] : m->named_parameters()) {
      h.text(name);
      h.floats(t.to_vector());
    }
  }
  return h.h;
}

struct ThreadsGuard {
  int saved = cpu_backend().threads();
  ~ThreadsGuard() { cpu_backend().set_threads(saved); }
};

// Digests recorded from commit 23e1217, before the issue-14 refactor.
const std::map<std::string, uint64_t>& pinned() {
  static const std::map<std::string, uint64_t> p = {
      {"lenet5 fp32", 0x4f3dfe785f920a96ull},
      {"lenet5 e6m6/fp32", 0x9e525de895f2927dull},
      {"lenet5 sr-chunked", 0x05be7be4ce620ec9ull},
      {"lenet5 mx-2:4", 0x42fed653e8b1bbc7ull},
      {"lenet5 lut-mitchell", 0x6bf8c9b2c614c18bull},
      {"resnet18 fp32", 0x3bb17cd61c806843ull},
      {"resnet18 e6m6/fp32", 0x78628a478e167296ull},
      {"resnet18 sr-chunked", 0xd3f1488e7c3b530aull},
      {"resnet18 mx-2:4", 0xd378101f096d2d73ull},
      {"resnet18 lut-mitchell", 0x37caaf161f916abdull},
      {"transformer fp32", 0xcdde0cb242ae1084ull},
      {"transformer e6m6/fp32", 0x876960b28fe75d80ull},
      {"transformer sr-chunked", 0xca38f3eb4a47faa0ull},
      {"transformer mx-2:4", 0xb2975c82614ac813ull},
      {"transformer lut-mitchell", 0x1ffa28d81594dda0ull},
      {"crnn-lstm fp32", 0x955a481e44a94d27ull},
      {"crnn-lstm e6m6/fp32", 0x078233a5c5c0b96dull},
      {"crnn-lstm sr-chunked", 0xfb85122d5d0aeaa3ull},
      {"crnn-lstm mx-2:4", 0x252e8b655fbbcd46ull},
      {"crnn-lstm lut-mitchell", 0xe2fc3ae28c3240bcull},
      {"crnn-gru fp32", 0xb2c2ba672b64b07aull},
      {"crnn-gru e6m6/fp32", 0x814bc76784db9787ull},
      {"crnn-gru sr-chunked", 0x1c40075ce68f8da6ull},
      {"crnn-gru mx-2:4", 0x65deca4738b056ddull},
      {"crnn-gru lut-mitchell", 0xb227ffcd2703e33bull},
      {"gcn fp32", 0x49909cc8cd90591dull},
      {"gcn e6m6/fp32", 0x86074c840047167cull},
      {"gcn sr-chunked", 0x3210bdfb2568af36ull},
      {"gcn mx-2:4", 0x387c45b3b3c18f42ull},
      {"gcn lut-mitchell", 0xa1b9321640e07337ull},
      {"mlp fp32", 0xd6a31a1cbd832518ull},
      {"mlp e6m6/fp32", 0x63399db82350af1dull},
      {"mlp sr-chunked", 0x5da58a9a9f3fab75ull},
      {"mlp mx-2:4", 0x98f182864a2e159aull},
      {"mlp lut-mitchell", 0x9246a5b324b01765ull},
  };
  return p;
}

}  // namespace

TEST_CASE("pinned training bits: every model under five policies, 1-3 threads", "[pinned][models][train]") {
  ThreadsGuard guard;
  for (const ModelCase& mc : model_cases()) {
    for (const PolicyCase& pc : policy_cases()) {
      const std::string key = std::string(mc.name) + " " + pc.name;
      for (int threads : {1, 2, 3}) {
        cpu_backend().set_threads(threads);
        const uint64_t got = train_digest(mc, pc);
        INFO(key << " on " << threads << " threads: digest 0x" << std::hex << got);
        auto it = pinned().find(key);
        REQUIRE(it != pinned().end());
        CHECK(got == it->second);
      }
    }
  }
}
