// Transformers learn a synthetic sequence task that needs attention: reverse a
// sequence of 8 random tokens from 8 (output position t is input token T-1-t,
// so information must move between positions). Inputs are one-hot tokens and
// one-hot positions (no Embedding layer) brought to the model width by a Linear.
//  - [encoder]: Linear -> TransformerEncoderBlock -> Linear, in fp32 and in
//    bf16 with an fp32 accumulator;
//  - [decoder]: an encoder over the source, a TransformerDecoderBlock over the
//    shifted target (teacher forcing, causal self-attention, cross-attention
//    to the encoder's output), in fp32.
// Each trains to >= 95% token accuracy on 256 held-out sequences, twice (with
// one and with two CPU worker threads), with bit-identical final weights
// (memcmp): dropout masks and every rounding are keyed by seed, path and step.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/autograd.h"
#include "layers/linear.h"
#include "layers/loss.h"
#include "layers/shape_ops.h"
#include "layers/transformer.h"
#include "optim/adam.h"

using namespace emu;

namespace {

constexpr int64_t kVocab = 8, kLen = 8, kWidth = 32, kBos = kVocab;  // kBos: the decoder's start token

struct Batch {
  Tensor src;      // (N, T, V + T): one-hot token, one-hot position
  Tensor tgt_in;   // (N, T, V + 1 + T): the target shifted right behind a start token, one-hot, + position
  Tensor targets;  // (N*T): the token at the mirrored position
};

void one_hot(float* row, int64_t token, int64_t vocab, int64_t position) {
  row[token] = 1.0f;
  row[vocab + position] = 1.0f;
}

Batch make_batch(int64_t n, std::mt19937_64& rng) {
  const int64_t src_w = kVocab + kLen, tgt_w = kVocab + 1 + kLen;
  std::vector<float> src(static_cast<size_t>(n * kLen * src_w), 0.0f),
      tgt(static_cast<size_t>(n * kLen * tgt_w), 0.0f);
  std::vector<float> y;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> tokens(kLen);
    for (int64_t& t : tokens) t = static_cast<int64_t>(rng() % kVocab);
    for (int64_t t = 0; t < kLen; ++t) {
      one_hot(src.data() + (i * kLen + t) * src_w, tokens[t], kVocab, t);
      one_hot(tgt.data() + (i * kLen + t) * tgt_w, t == 0 ? kBos : tokens[kLen - t], kVocab + 1, t);
      y.push_back(static_cast<float>(tokens[kLen - 1 - t]));
    }
  }
  return {Tensor::from_vector({n, kLen, src_w}, src), Tensor::from_vector({n, kLen, tgt_w}, tgt),
          Tensor::from_vector({n * kLen}, y)};
}

TransformerBlockOptions block_options() {
  TransformerBlockOptions o;
  o.embed_dim = kWidth;
  o.num_heads = 4;
  o.ff_dim = 64;
  o.dropout = 0.05f;
  o.norm_first = true;
  return o;
}

// batch -> logits (N, T, V).
class Reverser : public Module {
 public:
  explicit Reverser(bool decoder) {
    src_in = register_module("src_in", std::make_shared<Linear>(kVocab + kLen, kWidth));
    encoder = register_module("encoder", std::make_shared<TransformerEncoderBlock>(block_options()));
    if (decoder) {
      tgt_in = register_module("tgt_in", std::make_shared<Linear>(kVocab + 1 + kLen, kWidth));
      this->decoder = register_module("decoder", std::make_shared<TransformerDecoderBlock>(block_options()));
    }
    head = register_module("head", std::make_shared<Linear>(kWidth, kVocab));
  }
  Tensor forward(const Batch& b) {
    Tensor memory = encoder->forward(src_in->forward(b.src));
    if (!decoder) return head->forward(memory);
    return head->forward(decoder->forward(tgt_in->forward(b.tgt_in), memory));
  }

  std::shared_ptr<Linear> src_in, tgt_in, head;
  std::shared_ptr<TransformerEncoderBlock> encoder;
  std::shared_ptr<TransformerDecoderBlock> decoder;
};

struct Result {
  std::vector<float> weights;  // every parameter, concatenated
  double accuracy = 0, seconds = 0;
  float first_loss = 0, last_loss = 0;
};

// threads: the CPU backend's worker threads; results never depend on them.
Result train(bool decoder, const NumericsPolicy& policy, int steps, int threads) {
  const auto start = std::chrono::steady_clock::now();
  cpu_backend().set_threads(threads);
  Reverser m(decoder);
  m.initialize(11);
  m.apply_numerics(policy);
  CrossEntropyLoss loss_fn;
  loss_fn.apply_numerics(policy);
  Adam opt(m.named_parameters(), AdamOptions{3e-3f});
  std::mt19937_64 rng(2024);
  Result r;
  for (int s = 0; s < steps; ++s) {
    const Batch b = make_batch(32, rng);
    m.train();
    opt.zero_grad();
    Tensor loss = loss_fn.forward(reshape(m.forward(b), {-1, kVocab}), b.targets);
    loss.backward();
    opt.step();
    m.context().step += 1;
    if (s == 0) r.first_loss = loss.item();
    r.last_loss = loss.item();
  }
  for (auto& [_, p] : m.named_parameters()) {
    const std::vector<float> v = p.to_vector();
    r.weights.insert(r.weights.end(), v.begin(), v.end());
  }
  m.eval();
  NoGradGuard no_grad;
  std::mt19937_64 held_out(99);
  const Batch test = make_batch(256, held_out);
  const std::vector<float> logits = m.forward(test).to_vector(), want = test.targets.to_vector();
  int64_t right = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < kVocab; ++c)
      if (logits[i * kVocab + c] > logits[i * kVocab + best]) best = c;
    right += best == static_cast<int64_t>(want[i]);
  }
  r.accuracy = static_cast<double>(right) / static_cast<double>(want.size());
  cpu_backend().set_threads(0);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

void train_twice(const char* name, bool decoder, const NumericsPolicy& policy, int steps) {
  INFO(name);
  const Result a = train(decoder, policy, steps, 1);
  const Result b = train(decoder, policy, steps, 2);
  WARN(name << ": held-out token accuracy " << a.accuracy << ", loss " << a.first_loss << " -> "
            << a.last_loss << ", " << a.seconds << " s (1 thread) and " << b.seconds << " s (2 threads) for "
            << steps << " steps");
  REQUIRE(a.weights.size() == b.weights.size());
  CHECK(std::memcmp(a.weights.data(), b.weights.data(), a.weights.size() * sizeof(float)) == 0);
  CHECK(a.accuracy == b.accuracy);
  CHECK(a.accuracy >= 0.95);
  CHECK(a.last_loss < 0.1f * a.first_loss);
}

}  // namespace

TEST_CASE("an encoder learns to reverse sequences, twice to identical bits", "[train][encoder]") {
  NumericsPolicy bf16;
  bf16.set("format", "bf16");
  bf16.set("acc", "fp32");
  train_twice("encoder, fp32", false, NumericsPolicy(), 100);
  train_twice("encoder, bf16 / acc fp32", false, bf16, 100);
}

TEST_CASE("an encoder-decoder learns to reverse sequences, twice to identical bits", "[train][decoder]") {
  train_twice("encoder-decoder, fp32", true, NumericsPolicy(), 100);
}
