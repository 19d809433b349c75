// Multi-head attention (layers/attention.h) and the Transformer blocks
// (layers/transformer.h):
//  - finite-difference gradients in plain fp32: MHA (self- and cross-attention,
//    key padding and causal masks, attention dropout), encoder and decoder
//    blocks in pre-norm and post-norm order;
//  - an attention score equals, bit for bit, `emutrain calc --batch`'s `dot` of
//    the same q and k operands as read (mul e5m10 / acc e5m10);
//  - masked positions get probability exactly +0 and do not enter the max or
//    the sum (keys and values there change no output bit);
//  - the attention ops equal literal mac_reduce / numerics/round.h loops in many
//    policies (chunks, posits, :sr draws included), whatever the thread count;
//    the masked softmax equals softmax_forward/backward where no mask applies;
//  - attention dropout follows its Philox draws; the decoder is causal.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "calc/batch.h"
#include "core/autograd.h"
#include "layers/attention.h"
#include "layers/layer_io.h"
#include "layers/transformer.h"
#include "numerics/functions.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/grad_check.h"
#include "tests/test_util.h"

using namespace emu;
using emu::test::bits;
using emu::test::mismatch;
using emu::test::policy;

namespace {

// Values over 4 binades around 1, 5% zeros (test_util.h rich_tensor).
Tensor rich_tensor(const Shape& shape, uint64_t seed, double zero_fraction = 0.05) {
  return test::rich_tensor(shape, seed, {zero_fraction, 4, -2, false});
}

std::string hex(float x) { return fmt::format("0x{:08x}", bits(x)); }

uint32_t drw(const Format& f, DrawKey key, uint32_t stage, uint64_t index) {
  return is_stochastic(f) ? philox_draw(key.seed, key.stream + stage, index) : 0;
}

// mac_reduce of the K terms a_k * b_k (as given), output o of a result, drawing at stage `stage`.
float literal_mac(const MacPolicy& p, const std::vector<float>& a, const std::vector<float>& b, DrawKey key,
                  uint32_t stage, uint64_t o) {
  const uint64_t base = o * mac_site_count(static_cast<int64_t>(a.size()), p.chunk);
  auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream + stage, base + site); };
  return static_cast<float>(mac_reduce(p, a.data(), b.data(), static_cast<int64_t>(a.size()), nullptr, draw));
}

struct Dims {
  int64_t N, H, T, S, D;
  int64_t E() const { return H * D; }
};

// s[n,h,t,j] = reduction over d of x[n,t,h*D+d] y[n,j,h*D+d].
std::vector<float> literal_scores(const MacPolicy& p, const Dims& d, const std::vector<float>& x,
                                  const std::vector<float>& y, DrawKey key) {
  std::vector<float> s;
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t t = 0; t < d.T; ++t)
        for (int64_t j = 0; j < d.S; ++j) {
          std::vector<float> a, b;
          for (int64_t k = 0; k < d.D; ++k) {
            a.push_back(x[(n * d.T + t) * d.E() + h * d.D + k]);
            b.push_back(y[(n * d.S + j) * d.E() + h * d.D + k]);
          }
          s.push_back(literal_mac(p, a, b, key, 0, s.size()));
        }
  return s;
}

// c[n,t,h*D+k] = reduction over j of a[n,h,t,j] y[n,j,h*D+k].
std::vector<float> literal_context(const MacPolicy& p, const Dims& d, const std::vector<float>& w,
                                   const std::vector<float>& y, DrawKey key) {
  std::vector<float> c;
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t t = 0; t < d.T; ++t)
      for (int64_t h = 0; h < d.H; ++h)
        for (int64_t k = 0; k < d.D; ++k) {
          std::vector<float> a, b;
          for (int64_t j = 0; j < d.S; ++j) {
            a.push_back(w[((n * d.H + h) * d.T + t) * d.S + j]);
            b.push_back(y[(n * d.S + j) * d.E() + h * d.D + k]);
          }
          c.push_back(literal_mac(p, a, b, key, 0, c.size()));
        }
  return c;
}

// c[n,j,h*D+k] = reduction over t of a[n,h,t,j] x[n,t,h*D+k].
std::vector<float> literal_context_t(const MacPolicy& p, const Dims& d, const std::vector<float>& w,
                                     const std::vector<float>& x, DrawKey key) {
  std::vector<float> c;
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t j = 0; j < d.S; ++j)
      for (int64_t h = 0; h < d.H; ++h)
        for (int64_t k = 0; k < d.D; ++k) {
          std::vector<float> a, b;
          for (int64_t t = 0; t < d.T; ++t) {
            a.push_back(w[((n * d.H + h) * d.T + t) * d.S + j]);
            b.push_back(x[(n * d.T + t) * d.E() + h * d.D + k]);
          }
          c.push_back(literal_mac(p, a, b, key, 0, c.size()));
        }
  return c;
}

bool masked(const std::vector<float>& mask, const Dims& d, bool causal, int64_t n, int64_t t, int64_t j) {
  return (causal && j > t) || (!mask.empty() && mask[n * d.S + j] != 0.0f);
}

// The masked softmax of core/backend_ops_attention.h, one row at a time.
std::vector<float> literal_softmax(const MacPolicy& p, const Dims& d, float scale, bool causal,
                                   const std::vector<float>& mask, const std::vector<float>& s, DrawKey key) {
  const Format& out = p.out;
  MacPolicy sp = p;
  sp.mul_exact = true;
  sp.out = p.chunk > 0 ? p.acc_outer : p.acc;
  std::vector<float> y(s.size(), 0.0f);
  const std::vector<float> ones(static_cast<size_t>(d.S), 1.0f);
  for (int64_t r = 0; r < d.N * d.H * d.T; ++r) {
    const int64_t n = r / (d.H * d.T), t = r % d.T;
    std::vector<float> z(static_cast<size_t>(d.S)), e(static_cast<size_t>(d.S), 0.0f);
    float m = -std::numeric_limits<float>::infinity();
    bool any = false;
    for (int64_t j = 0; j < d.S; ++j) {
      if (masked(mask, d, causal, n, t, j)) continue;
      const uint64_t i = static_cast<uint64_t>(r * d.S + j);
      z[j] = static_cast<float>(format_mul(out, s[i], scale, drw(out, key, 5, i)));
      m = std::max(m, z[j]);
      any = true;
    }
    if (!any) continue;
    for (int64_t j = 0; j < d.S; ++j) {
      if (masked(mask, d, causal, n, t, j)) continue;
      const uint64_t i = static_cast<uint64_t>(r * d.S + j);
      const float dj = static_cast<float>(format_sub(out, z[j], m, drw(out, key, 0, i)));
      e[j] = quantize(out, fn_exp(dj), drw(out, key, 1, i));
    }
    const uint64_t base = static_cast<uint64_t>(r) * mac_site_count(d.S, p.chunk);
    auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream + 2, base + site); };
    const double sum = mac_reduce(sp, e.data(), ones.data(), d.S, nullptr, draw);
    for (int64_t j = 0; j < d.S; ++j) {
      if (masked(mask, d, causal, n, t, j)) continue;
      const uint64_t i = static_cast<uint64_t>(r * d.S + j);
      y[i] = static_cast<float>(format_div(out, e[j], sum, drw(out, key, 4, i)));
    }
  }
  return y;
}

std::vector<float> literal_softmax_grad(const MacPolicy& p, const Dims& d, float scale, bool causal,
                                        const std::vector<float>& mask, const std::vector<float>& y,
                                        const std::vector<float>& gy, DrawKey key) {
  const Format& G = p.out;
  std::vector<float> gs(y.size(), 0.0f);
  for (int64_t r = 0; r < d.N * d.H * d.T; ++r) {
    const int64_t n = r / (d.H * d.T), t = r % d.T;
    std::vector<float> yr(y.begin() + r * d.S, y.begin() + (r + 1) * d.S);
    std::vector<float> gr(gy.begin() + r * d.S, gy.begin() + (r + 1) * d.S);
    const float dot = literal_mac(p, gr, yr, key, 0, static_cast<uint64_t>(r));
    for (int64_t j = 0; j < d.S; ++j) {
      if (masked(mask, d, causal, n, t, j)) continue;
      const uint64_t i = static_cast<uint64_t>(r * d.S + j);
      const double tj = format_sub(G, gr[j], dot, drw(G, key, 1, i));
      const double u = format_mul(G, yr[j], tj, drw(G, key, 2, i));
      gs[i] = static_cast<float>(format_mul(G, u, scale, drw(G, key, 3, i)));
    }
  }
  return gs;
}

std::vector<NumericsPolicy> attention_policies() {
  return {policy({{"mul", "e5m10"}, {"acc", "e5m10"}, {"out", "bf16"}, {"grads", "bf16"}}),
          policy({{"format", "fp32"}}),
          policy({{"mul", "exact"}}),  // exact products into an fp32 accumulator
          policy({{"mul", "bf16"}, {"acc", "fp32"}}),
          policy({{"format", "bf16"}}),
          policy({{"format", "bf16"}, {"acc", "fp64"}, {"chunk", "3"}, {"acc_outer", "fp32"}}),
          policy({{"mul", "e6m6:rtz"}, {"acc", "e8m12:rup"}, {"out", "fp8_e4m3"}, {"grads", "e5m2:rdn"}}),
          policy({{"mul", "e5m10:sr"},
                  {"acc", "bf16:sr"},
                  {"chunk", "4"},
                  {"acc_outer", "e5m10:sr"},
                  {"out", "fp16:sr"},
                  {"grads", "bf16:sr"}}),
          policy({{"format", "posit16_1"}})};
}

std::vector<float> key_padding(const Dims& d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> m(static_cast<size_t>(d.N * d.S));
  for (float& v : m) v = rng() % 3 == 0 ? 1.0f : 0.0f;
  for (int64_t j = 0; j < d.S; ++j) m[j] = 1.0f;  // batch 0: every key padded
  return m;
}

struct CpuThreads {
  explicit CpuThreads(int n) { cpu_backend().set_threads(n); }
  ~CpuThreads() { cpu_backend().set_threads(0); }
};

// Gradient check of a module's forward in x (and the tensors in `extra`) and all its parameters.
test::GradCheckResult check_all(Module& m, std::vector<Tensor> inputs,
                                const std::function<Tensor(const std::vector<Tensor>&)>& f) {
  for (auto& [_, p] : m.named_parameters()) inputs.push_back(p);
  return test::grad_check(f, inputs);
}

}  // namespace

TEST_CASE("the attention scale is 1/sqrt(D) in binary32, without libm", "[attention]") {
  CHECK(attention_scale(1) == 1.0f);
  CHECK(attention_scale(4) == 0.5f);
  CHECK(attention_scale(16) == 0.25f);
  CHECK(attention_scale(64) == 0.125f);
  for (int64_t d : {2, 3, 5, 8, 24, 32, 48, 96, 128, 256}) {
    INFO("D = " << d);
    CHECK(attention_scale(d) == static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))));
  }
  CHECK_THROWS_AS(attention_scale(0), std::invalid_argument);
}

TEST_CASE("MultiheadAttention gradients match finite differences in fp32", "[attention]") {
  CpuThreads one(1);  // thousands of tiny forward passes: threads would only add start-up costs
  SECTION("self-attention with a key padding mask") {
    MultiheadAttention mha(6, 2);  // D = 3: the scale is not a power of 2
    mha.initialize(5);
    Tensor x = test::random_tensor({2, 4, 6}, 11).set_requires_grad(true);
    const Tensor mask = Tensor::from_vector({2, 4}, {0, 0, 0, 0, 0, 1, 0, 1});
    auto r = check_all(mha, {x},
                       [&](const std::vector<Tensor>& in) { return mha.forward(in[0], in[0], in[0], mask); });
    INFO(r.detail);
    CHECK(r.ok);
  }
  SECTION("cross-attention, causal, other key and value sizes") {
    MultiheadAttention mha(4, 2, 0.0f, true, 3, 5, 3);  // head_dim 3, kdim 5, vdim 3
    mha.initialize(6);
    Tensor q = test::random_tensor({2, 3, 4}, 12).set_requires_grad(true);
    Tensor k = test::random_tensor({2, 5, 5}, 13).set_requires_grad(true);
    Tensor v = test::random_tensor({2, 5, 3}, 14).set_requires_grad(true);
    const Tensor mask = Tensor::from_vector({2, 5}, {0, 1, 0, 0, 1, 0, 0, 0, 1, 0});
    auto r = check_all(mha, {q, k, v}, [&](const std::vector<Tensor>& in) {
      return mha.forward(in[0], in[1], in[2], mask, true);
    });
    INFO(r.detail);
    CHECK(r.ok);
  }
  SECTION("attention dropout in training (the mask is fixed within a step)") {
    MultiheadAttention mha(8, 4, 0.3f);
    mha.initialize(7);
    mha.context().step = 4;
    Tensor x = test::random_tensor({2, 5, 8}, 15).set_requires_grad(true);
    auto r = check_all(mha, {x}, [&](const std::vector<Tensor>& in) {
      return mha.forward(in[0], in[0], in[0], Tensor(), true);
    });
    INFO(r.detail);
    CHECK(r.ok);
  }
}

TEST_CASE("Transformer blocks' gradients match finite differences in fp32", "[attention]") {
  CpuThreads one(1);  // thousands of tiny forward passes: threads would only add start-up costs
  for (bool norm_first : {true, false}) {
    TransformerBlockOptions o;
    o.embed_dim = 8;
    o.num_heads = 2;
    o.ff_dim = 12;
    o.dropout = 0.1f;  // training: every dropout's mask is fixed within a step
    o.norm_first = norm_first;
    o.activation = Activation::Gelu;  // smooth, so finite differences see no kink
    INFO("norm_first " << norm_first);
    {
      TransformerEncoderBlock enc(o);
      enc.initialize(21);
      enc.context().step = 2;
      Tensor x = test::random_tensor({2, 5, 8}, 22).set_requires_grad(true);
      const Tensor mask = Tensor::from_vector({2, 5}, {0, 0, 0, 1, 1, 0, 0, 0, 0, 0});
      auto r = check_all(enc, {x}, [&](const std::vector<Tensor>& in) { return enc.forward(in[0], mask); });
      INFO("encoder: " << r.detail);
      CHECK(r.ok);
    }
    {
      TransformerDecoderBlock dec(o);
      dec.initialize(23);
      dec.context().step = 3;
      Tensor x = test::random_tensor({2, 4, 8}, 24).set_requires_grad(true);
      Tensor memory = test::random_tensor({2, 6, 8}, 25).set_requires_grad(true);
      const Tensor mem_mask = Tensor::from_vector({2, 6}, {0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0});
      auto r = check_all(dec, {x, memory},
                         [&](const std::vector<Tensor>& in) { return dec.forward(in[0], in[1], mem_mask); });
      INFO("decoder: " << r.detail);
      CHECK(r.ok);
    }
  }
}

TEST_CASE("an attention score equals calc dot of the q and k operands as read", "[attention]") {
  const int64_t N = 2, T = 3, S = 4, E = 8, H = 2, D = 4;  // D = 4: scale 0.5
  MultiheadAttention mha(E, H);
  mha.initialize(31);
  mha.apply_numerics(policy({{"mul", "e5m10"}, {"acc", "e5m10"}, {"activations", "bf16"}}));
  const Tensor query = test::random_tensor({N, T, E}, 32, -3, 3),
               key = test::random_tensor({N, S, E}, 33, -3, 3);
  AttentionTrace trace;
  {
    NoGradGuard no_grad;
    mha.forward(query, key, key, Tensor(), false, &trace);
  }
  // The operands were really read into bf16: the projections' outputs rounded.
  std::vector<float> q_proj = mha.q_proj->forward(query).to_vector();
  for (float& v : q_proj) v = quantize(mha.numerics().activations, v);
  REQUIRE(mismatch(trace.q.to_vector(), q_proj) == "");
  const std::vector<float> q = trace.q.to_vector(), k = trace.k.to_vector(), s = trace.scores.to_vector();
  REQUIRE(mismatch(q, q_proj) == "");
  std::string lines;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < S; ++j) {
          lines += "dot e5m10 e5m10 fp32";
          for (int64_t d = 0; d < D; ++d)
            lines += " " + hex(q[(n * T + t) * E + h * D + d]) + " " + hex(k[(n * S + j) * E + h * D + d]);
          lines += "\n";
        }
  std::istringstream input(lines);
  std::ostringstream output;
  REQUIRE(calc::run_calc_batch(input, output, 0) == 0);
  std::istringstream answers(output.str());
  std::vector<float> expected;
  for (std::string a; std::getline(answers, a);) {
    const uint32_t u = static_cast<uint32_t>(std::stoul(a, nullptr, 16));
    float v;
    std::memcpy(&v, &u, 4);
    expected.push_back(v);
  }
  CHECK(mismatch(s, expected) == "");
  // The products were really rounded: e5m10 differs from exact fp32 arithmetic somewhere.
  std::vector<float> fp32_dots;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < S; ++j) {
          float acc = 0.0f;
          for (int64_t d = 0; d < D; ++d)
            acc += q[(n * T + t) * E + h * D + d] * k[(n * S + j) * E + h * D + d];
          fp32_dots.push_back(acc);
        }
  CHECK(mismatch(s, fp32_dots) != "");
}

TEST_CASE("masked positions get probability exactly 0 and change nothing", "[attention]") {
  const int64_t N = 3, T = 5, E = 8, H = 2;
  for (const NumericsPolicy& p : {NumericsPolicy(), policy({{"format", "bf16"}, {"acc", "fp32"}})}) {
    for (bool causal : {false, true}) {
      MultiheadAttention mha(E, H);
      mha.initialize(41);
      mha.apply_numerics(p);
      INFO(mha.numerics().describe() << " causal " << causal);
      const Tensor mask = Tensor::from_vector({N, T}, {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1});
      const Tensor x = test::random_tensor({N, T, E}, 42);
      AttentionTrace trace;
      const std::vector<float> y = mha.forward(x, x, x, mask, causal, &trace).to_vector();
      const std::vector<float> probs = trace.probs.to_vector(), m = mask.to_vector();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t t = 0; t < T; ++t) {
            double total = 0;
            for (int64_t j = 0; j < T; ++j) {
              const float pr = probs[((n * H + h) * T + t) * T + j];
              if ((causal && j > t) || m[n * T + j] != 0.0f)
                CHECK(bits(pr) == 0u);
              else
                CHECK(pr > 0.0f);
              total += pr;
            }
            CHECK(std::fabs(total - 1.0) < 0.02);
          }
      // Huge keys and odd values at padded positions change no output bit: they enter neither the
      // max nor the sum nor the context.
      std::vector<float> xv = x.to_vector();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t j = 0; j < T; ++j)
          if (m[n * T + j] != 0.0f)
            for (int64_t e = 0; e < E; ++e) xv[(n * T + j) * E + e] = 1e4f * static_cast<float>(e + 1);
      // Only the keys and values: the queries at those positions are kept.
      const Tensor x2 = Tensor::from_vector({N, T, E}, xv);
      CHECK(mismatch(mha.forward(x, x2, x2, mask, causal).to_vector(), y) == "");
    }
  }
}

TEST_CASE("a query with every key masked gets zero weights and zero gradients", "[attention]") {
  MultiheadAttention mha(4, 1);
  mha.initialize(45);
  const Tensor mask = Tensor::from_vector({2, 3}, {1, 1, 1, 0, 0, 1});
  Tensor x = test::random_tensor({2, 3, 4}, 46).set_requires_grad(true);
  AttentionTrace trace;
  Tensor y = mha.forward(x, x, x, mask, false, &trace);
  for (int64_t i = 0; i < 9; ++i) CHECK(bits(trace.probs.to_vector()[i]) == 0u);
  y.backward(Tensor::full(y.shape(), 1.0f));
  for (float g : x.grad().to_vector()) CHECK(std::isfinite(g));
}

TEST_CASE("the attention ops equal literal loops in every policy and thread count", "[attention]") {
  const Dims d{2, 3, 5, 7, 4};
  const std::vector<float> q = rich_tensor({d.N, d.T, d.E()}, 51).to_vector();
  const std::vector<float> k = rich_tensor({d.N, d.S, d.E()}, 52).to_vector();
  const std::vector<float> w = rich_tensor({d.N, d.H, d.T, d.S}, 53, 0.2).to_vector();
  const std::vector<float> g = rich_tensor({d.N, d.T, d.E()}, 54).to_vector();
  const std::vector<float> mask = key_padding(d, 55);
  const Tensor tq = Tensor::from_vector({d.N, d.T, d.E()}, q), tk = Tensor::from_vector({d.N, d.S, d.E()}, k);
  const Tensor tw = Tensor::from_vector({d.N, d.H, d.T, d.S}, w),
               tg = Tensor::from_vector({d.N, d.T, d.E()}, g);
  const Tensor tm = Tensor::from_vector({d.N, d.S}, mask);
  const DrawKey key{99, 12345};
  for (const NumericsPolicy& policy_ : attention_policies()) {
    const LayerNumerics n = policy_.resolve("attn");
    const MacPolicy fp = n.mac, bp = backward_mac(n);
    for (int threads : {1, 8}) {  // 8 > 6 heads: the heads run in turn with threaded GEMMs
      CpuThreads guard(threads);
      INFO(n.describe() << " threads " << threads);
      Backend& be = cpu_backend();
      Tensor s = Tensor::zeros({d.N, d.H, d.T, d.S});
      be.attention_scores(fp, d.H, tq, tk, s, key);
      CHECK(mismatch(s.to_vector(), literal_scores(fp, d, q, k, key)) == "");
      // Views as operands: a transposed-then-transposed-back tensor is not contiguous.
      Tensor c = Tensor::zeros({d.N, d.T, d.E()});
      Tensor tk_view = Tensor::from_vector({d.N, d.E(), d.S}, tk.transpose(1, 2).to_vector()).transpose(1, 2);
      be.attention_context(fp, d.H, tw, tk_view, c, key);
      CHECK(mismatch(c.to_vector(), literal_context(fp, d, w, k, key)) == "");
      Tensor ct = Tensor::zeros({d.N, d.S, d.E()});
      be.attention_context_transposed(bp, d.H, tw, tg, ct, key);
      CHECK(mismatch(ct.to_vector(), literal_context_t(bp, d, w, g, key)) == "");
      for (bool causal : {false, true}) {
        for (bool with_mask : {false, true}) {
          INFO("causal " << causal << " mask " << with_mask);
          const std::vector<float> m = with_mask ? mask : std::vector<float>();
          // Scores in the same layout: (N,H,T,S) with S = 7 keys; T = 5 queries.
          Tensor probs = Tensor::zeros(s.shape());
          be.attention_softmax_forward(fp, 0.5f, causal, s, with_mask ? &tm : nullptr, probs, key);
          const std::vector<float> want = literal_softmax(fp, d, 0.5f, causal, m, s.to_vector(), key);
          CHECK(mismatch(probs.to_vector(), want) == "");
          const Tensor gp = rich_tensor(s.shape(), 56);
          Tensor gs = Tensor::zeros(s.shape());
          be.attention_softmax_backward(bp, 0.5f, causal, probs, gp, with_mask ? &tm : nullptr, gs, key);
          CHECK(mismatch(gs.to_vector(),
                         literal_softmax_grad(bp, d, 0.5f, causal, m, want, gp.to_vector(), key)) == "");
        }
      }
    }
  }
}

// A pwl softmax_exp (numerics/pwl.h) in attention: the same bits as the Softmax op's pwl exp on
// unmasked rows (both evaluate e_j = R(R(slope_k d_j) + intercept_k)), different bits from the exact
// exp, and the layer uses it. Formats without :sr (the two ops number their pwl draw stages apart).
TEST_CASE("attention evaluates a pwl softmax_exp as the Softmax op does", "[attention]") {
  const int64_t rows = 12, C = 9;
  for (const NumericsPolicy& base : attention_policies()) {
    const LayerNumerics plain = base.resolve("attn");
    if (is_stochastic(plain.out())) continue;
    NumericsPolicy p = base;
    p.set("functions.softmax_exp", "pwl:4");
    const LayerNumerics n = p.resolve("attn");
    INFO(n.describe());
    Tensor x = rich_tensor({rows, C}, 63);
    Tensor xq = Tensor::zeros({rows, C});
    cpu_backend().quantize(n.out(), x, xq, DrawKey{});
    const DrawKey key{3, 778};
    const FunctionApprox& exp = n.function(Function::SoftmaxExp);
    REQUIRE(exp.pwl());
    Tensor want = Tensor::zeros({rows, C}), got = Tensor::zeros({1, 2, rows / 2, C});
    Tensor exact = Tensor::zeros({1, 2, rows / 2, C});
    cpu_backend().softmax_forward_fn(n.mac, false, exp, xq, want, key);
    cpu_backend().attention_softmax_forward_fn(n.mac, exp, 1.0f, false, xq.view({1, 2, rows / 2, C}), nullptr,
                                               got, key);
    cpu_backend().attention_softmax_forward(n.mac, 1.0f, false, xq.view({1, 2, rows / 2, C}), nullptr, exact,
                                            key);
    CHECK(mismatch(got.to_vector(), want.to_vector()) == "");
    CHECK(mismatch(got.to_vector(), exact.to_vector()) != "");
  }
  // The layer takes the policy's softmax_exp: its output differs from the exact policy's.
  MultiheadAttention exact_attn(8, 2), pwl_attn(8, 2);
  exact_attn.initialize(65);
  pwl_attn.initialize(65);
  NumericsPolicy pp = policy({{"format", "bf16"}});
  exact_attn.apply_numerics(pp);
  pp.set("functions.softmax_exp", "pwl:2");
  pwl_attn.apply_numerics(pp);
  const Tensor q = test::random_tensor({2, 5, 8}, 64, -3, 3);
  NoGradGuard no_grad;
  const Tensor a = exact_attn.forward(q), b = pwl_attn.forward(q);
  CHECK(mismatch(a.to_vector(), b.to_vector()) != "");
}

TEST_CASE("the masked softmax is softmax_forward/backward where nothing is masked", "[attention]") {
  const int64_t rows = 12, C = 9;
  for (const NumericsPolicy& p : attention_policies()) {
    const LayerNumerics n = p.resolve("attn");
    INFO(n.describe());
    Tensor x = rich_tensor({rows, C}, 61);
    Tensor xq = Tensor::zeros({rows, C});
    cpu_backend().quantize(n.out(), x, xq, DrawKey{});  // scores are values of out: scale 1 keeps them
    const DrawKey key{3, 777};
    Tensor want = Tensor::zeros({rows, C}), got = Tensor::zeros({1, 2, rows / 2, C});
    cpu_backend().softmax_forward(n.mac, false, xq, want, key);
    cpu_backend().attention_softmax_forward(n.mac, 1.0f, false, xq.view({1, 2, rows / 2, C}), nullptr, got,
                                            key);
    CHECK(mismatch(got.to_vector(), want.to_vector()) == "");
    const Tensor gy = rich_tensor({rows, C}, 62);
    Tensor gwant = Tensor::zeros({rows, C}), ggot = Tensor::zeros({1, 2, rows / 2, C});
    cpu_backend().softmax_backward(backward_mac(n), false, want, gy, gwant, key);
    cpu_backend().attention_softmax_backward(backward_mac(n), 1.0f, false, got, gy.view({1, 2, rows / 2, C}),
                                             nullptr, ggot, key);
    CHECK(mismatch(ggot.to_vector(), gwant.to_vector()) == "");
  }
  // With a mask, in formats with -Inf: softmax_forward of the row with -Inf at the masked positions.
  for (const NumericsPolicy& p :
       {NumericsPolicy(), policy({{"format", "fp16"}}), policy({{"out", "bf16"}})}) {
    const LayerNumerics n = p.resolve("attn");
    INFO(n.describe());
    const Dims d{2, 1, 3, C, 1};
    const std::vector<float> mask = key_padding(d, 63);
    std::vector<float> x = rich_tensor({2, 1, 3, C}, 64).to_vector();
    for (float& v : x) v = quantize(n.out(), v);
    std::vector<float> xinf = x;
    for (int64_t r = 0; r < 6; ++r)
      for (int64_t j = 0; j < C; ++j)
        if (mask[(r / 3) * C + j] != 0.0f || j > r % 3)
          xinf[r * C + j] = -std::numeric_limits<float>::infinity();
    Tensor want = Tensor::zeros({6, C}), got = Tensor::zeros({2, 1, 3, C});
    const Tensor tm = Tensor::from_vector({2, C}, mask);
    cpu_backend().softmax_forward(n.mac, false, Tensor::from_vector({6, C}, xinf), want, DrawKey{});
    cpu_backend().attention_softmax_forward(n.mac, 1.0f, true, Tensor::from_vector({2, 1, 3, C}, x), &tm, got,
                                            DrawKey{});
    std::vector<float> w = want.to_vector();
    for (float& v : w) v = std::isnan(v) ? 0.0f : v;  // batch 0 is all padded: NaN there, +0 here
    CHECK(mismatch(got.to_vector(), w) == "");
  }
}

TEST_CASE("attention dropout drops weights by their Philox draws, per step", "[attention]") {
  MultiheadAttention mha(8, 2, 0.25f);
  mha.initialize(71);
  mha.context().seed = 5;
  mha.context().step = 7;
  const Tensor x = test::random_tensor({2, 6, 8}, 72);
  AttentionTrace trace;
  mha.forward(x, x, x, Tensor(), false, &trace);
  const std::vector<float> probs = trace.probs.to_vector(), w = trace.weights.to_vector();
  const DrawKey mask_key = draw_key(mha, DrawSite::Dropout);
  const uint64_t threshold = dropout_threshold(0.25f);
  int dropped = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const bool keep = philox_draw(mask_key.seed, mask_key.stream, i) >= threshold;
    const float want = keep ? probs[i] * (4.0f / 3.0f) : 0.0f;  // fp32: R(p * R(1/0.75))
    CHECK(bits(w[i]) == bits(want));
    dropped += !keep;
  }
  CHECK(dropped > 0);
  CHECK(dropped < static_cast<int>(w.size()) / 2);
  // Evaluation: no dropout; the weights are the probabilities.
  mha.eval();
  mha.forward(x, x, x, Tensor(), false, &trace);
  CHECK(mismatch(trace.weights.to_vector(), trace.probs.to_vector()) == "");
}

TEST_CASE("the decoder's self-attention is causal", "[attention]") {
  for (const NumericsPolicy& p : {NumericsPolicy(), policy({{"format", "e5m10"}})}) {
    TransformerBlockOptions o;
    o.embed_dim = 8;
    o.num_heads = 2;
    o.ff_dim = 16;
    o.dropout = 0.0f;
    TransformerDecoderBlock dec(o);
    dec.initialize(81);
    dec.apply_numerics(p);
    const Tensor memory = test::random_tensor({2, 5, 8}, 82);
    std::vector<float> x = test::random_tensor({2, 6, 8}, 83).to_vector();
    NoGradGuard no_grad;
    const std::vector<float> y = dec.forward(Tensor::from_vector({2, 6, 8}, x), memory).to_vector();
    for (size_t i = 2 * 6 * 8 / 2; i < x.size(); ++i) x[i] += 1.0f;  // batch 1, positions 0..5: all changed
    for (size_t i = 3 * 8; i < 6 * 8; ++i) x[i] -= 2.0f;             // batch 0, positions 3..5 changed
    const std::vector<float> y2 = dec.forward(Tensor::from_vector({2, 6, 8}, x), memory).to_vector();
    INFO(dec.numerics().describe());
    CHECK(mismatch(std::vector<float>(y2.begin(), y2.begin() + 3 * 8),
                   std::vector<float>(y.begin(), y.begin() + 3 * 8)) == "");
    CHECK(mismatch(std::vector<float>(y2.begin() + 3 * 8, y2.begin() + 6 * 8),
                   std::vector<float>(y.begin() + 3 * 8, y.begin() + 6 * 8)) != "");
  }
}

TEST_CASE("attention under layer-level emulation rounds only the results", "[attention]") {
  MultiheadAttention plain(8, 2), layer(8, 2);
  plain.initialize(91);
  layer.initialize(91);
  NumericsPolicy p = policy({{"format", "e4m3"}});
  p.set("emulation", "layer");
  layer.apply_numerics(p);
  const Tensor x = test::random_tensor({2, 3, 8}, 92);
  // Every sub-layer (projections, the core) computes in fp32 and rounds its output.
  auto round = [&](Tensor t) {
    cpu_backend().quantize(layer.numerics().out(), t, t, DrawKey{});
    return t;
  };
  NoGradGuard no_grad;
  Tensor q = round(plain.q_proj->forward(x)), k = round(plain.k_proj->forward(x));
  Tensor v = round(plain.v_proj->forward(x));
  AttentionOptions o;
  o.heads = 2;
  Tensor ctx = round(attention(plain, q, k, v, Tensor(), o));
  const std::vector<float> want = round(plain.out_proj->forward(ctx)).to_vector();
  CHECK(mismatch(layer.forward(x).to_vector(), want) == "");
}

TEST_CASE("attention rejects shapes it cannot attend over", "[attention]") {
  CHECK_THROWS_AS(MultiheadAttention(6, 4), std::invalid_argument);
  MultiheadAttention mha(8, 2);
  CHECK_THROWS_AS(mha.forward(Tensor::zeros({2, 3, 7})), std::invalid_argument);
  CHECK_THROWS_AS(mha.forward(Tensor::zeros({2, 3, 8}), Tensor::zeros({2, 4, 8}), Tensor::zeros({2, 4, 8}),
                              Tensor::zeros({2, 3})),
                  std::invalid_argument);
}
