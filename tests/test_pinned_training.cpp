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
#include "tests/pinned_cases.h"
#include "tests/test_models_util.h"

using namespace emu;
using namespace emu::test::pinned;

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

// Outputs taken as Tensor::uninitialized (an op's output, a copy's target) must be written in
// full before anything reads them: with that storage starting as NaN instead, every digest must
// still be the pinned one (an element left unwritten would put a NaN into the losses or
// parameters, or at least change their bits).
TEST_CASE("pinned training bits hold when uninitialised tensors start as NaN", "[pinned][models][train]") {
  ThreadsGuard guard;
  struct PoisonGuard {
    PoisonGuard() { Storage::poison_uninitialized(true); }
    ~PoisonGuard() { Storage::poison_uninitialized(false); }
  } poison;
  cpu_backend().set_threads(2);
  for (const ModelCase& mc : model_cases()) {
    for (const PolicyCase& pc : policy_cases()) {
      const std::string key = std::string(mc.name) + " " + pc.name;
      const uint64_t got = train_digest(mc, pc);
      INFO(key << ": digest 0x" << std::hex << got);
      auto it = pinned().find(key);
      REQUIRE(it != pinned().end());
      CHECK(got == it->second);
    }
  }
}
