// Embedding, index_select, gather_rows / last_valid_step (layers/embedding.h, layers/index_select.h,
// backends/cpu/sequence_ops.cpp):
//  - finite-difference gradients in plain fp32 (padding_idx, repeated ids and indices, every dim);
//  - forward: the rows of the table read in the weights format, rounded to out; index_select moves
//    values without rounding;
//  - backward: per row, mac_reduce (mul exact) over the occurrences in ascending position, rounded to
//    the grads format, with chunks and :sr draws; the order is really the ascending one; the padding row
//    gets +0;
//  - results identical for 1 and 2 threads.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/autograd.h"
#include "layers/embedding.h"
#include "layers/index_select.h"
#include "layers/layer_io.h"
#include "layers/shape_ops.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/grad_check.h"
#include "tests/test_util.h"

using namespace emu;
using emu::test::mismatch;
using emu::test::policy;

namespace {

Tensor ids_tensor(const Shape& shape, const std::vector<int>& ids) {
  std::vector<float> v(ids.begin(), ids.end());
  return Tensor::from_vector(shape, v);
}

// Random ids in [0, V) with many repeats.
Tensor random_ids(const Shape& shape, int64_t V, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = static_cast<float>(rng() % static_cast<uint64_t>(V));
  return Tensor::from_vector(shape, v);
}

// Values with full significands over a few binades, some exact zeros.
Tensor rich_tensor(const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) {
    if (rng() % 10 == 0) {
      x = 0.0f;
      continue;
    }
    const float m = 1.0f + static_cast<float>(rng() & 0x7fffff) * 0x1p-23f;
    x = std::ldexp(m, static_cast<int>(rng() % 8) - 4) * ((rng() & 1) ? -1.0f : 1.0f);
  }
  return Tensor::from_vector(shape, v);
}

// The scatter-sum of index_sum written out: dst[a, s, b] = mac_reduce (mul exact) over the positions p with
// index[p] == s in ascending p (the terms are the occurrences), draws at o * mac_site_count(P, chunk) + site.
std::vector<float> literal_scatter(const MacPolicy& p, const std::vector<float>& index, int64_t skip,
                                   const std::vector<float>& src, int64_t A, int64_t S, int64_t B,
                                   DrawKey key) {
  const int64_t P = static_cast<int64_t>(index.size());
  MacPolicy sp = p;
  sp.mul_exact = true;
  std::vector<float> dst;
  for (int64_t a = 0; a < A; ++a)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t b = 0; b < B; ++b) {
        std::vector<float> terms, ones;
        for (int64_t q = 0; q < P && s != skip; ++q)
          if (index[q] == static_cast<float>(s)) {
            terms.push_back(src[(a * P + q) * B + b]);
            ones.push_back(1.0f);
          }
        const uint64_t o = static_cast<uint64_t>(dst.size());
        const uint64_t base = o * mac_site_count(P, sp.chunk);
        auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream, base + site); };
        dst.push_back(static_cast<float>(
            mac_reduce(sp, terms.data(), ones.data(), static_cast<int64_t>(terms.size()), nullptr, draw)));
      }
  return dst;
}

struct EmbRun {
  std::vector<float> y, gw;
};

EmbRun run_embedding(Embedding& m, const Tensor& ids, const Tensor& gy) {
  m.zero_grad();
  Tensor y = m.forward(ids);
  y.backward(gy);
  return {y.to_vector(), m.weight.grad().to_vector()};
}

}  // namespace

TEST_CASE("embedding gradients match finite differences in fp32, padding row excluded", "[embedding]") {
  const int64_t V = 7, D = 3;
  Embedding m(V, D, /*padding_idx=*/2);
  m.initialize(5);
  // Repeated ids (3 three times, 0 twice) and the padding id twice.
  const Tensor ids = ids_tensor({2, 5}, {3, 0, 2, 3, 6, 0, 3, 2, 5, 1});
  std::vector<float> keep;  // the positions whose id is not padding_idx
  const std::vector<float> iv = ids.to_vector();
  for (size_t p = 0; p < iv.size(); ++p)
    if (iv[p] != 2.0f) keep.push_back(static_cast<float>(p));
  const Tensor keep_t = Tensor::from_vector({static_cast<int64_t>(keep.size())}, keep);
  Tensor w = test::random_tensor({V, D}, 21).set_requires_grad(true);
  // The outputs at padding positions are dropped, so the true derivative of the loss with respect to the
  // padding row is 0, which is what the layer hands it.
  auto f = [&](const std::vector<Tensor>& in) {
    return index_select(m, reshape(embedding(m, ids, in[0], m.padding_idx), {10, D}), 0, keep_t);
  };
  const test::GradCheckResult r = test::grad_check(f, {w});
  INFO(r.detail);
  CHECK(r.ok);

  // With every output kept, the padding positions output the stored row, which still gets +0.
  Tensor y = embedding(m, ids, w, 2);
  REQUIRE(y.shape() == Shape{2, 5, D});
  const std::vector<float> yv = y.to_vector(), wv = w.to_vector();
  for (int64_t j = 0; j < D; ++j) {
    CHECK(test::bits(yv[2 * D + j]) == test::bits(wv[2 * D + j]));
    CHECK(test::bits(yv[7 * D + j]) == test::bits(wv[2 * D + j]));
  }
  w.zero_grad();
  y.backward(Tensor::full({2, 5, D}, 1.0f));
  const std::vector<float> gw = w.grad().to_vector();
  for (int64_t j = 0; j < D; ++j) {
    CHECK(test::bits(gw[2 * D + j]) == 0u);  // +0
    CHECK(gw[3 * D + j] == 3.0f);            // id 3 three times
    CHECK(gw[4 * D + j] == 0.0f);            // never looked up
  }
}

TEST_CASE("embedding initialises to unit variance with a zero padding row", "[embedding]") {
  Embedding m(200, 50, 7);
  m.initialize(3);
  const std::vector<float> w = m.weight.to_vector();
  double s2 = 0;
  for (float v : w) {
    CHECK(std::fabs(v) <= 1.7320508f);
    s2 += static_cast<double>(v) * v;
  }
  CHECK(std::fabs(s2 / static_cast<double>(w.size()) - 1.0) < 0.05);
  for (int64_t j = 0; j < 50; ++j) CHECK(w[7 * 50 + j] == 0.0f);
}

TEST_CASE("embedding forward reads the table in the weights format and rounds to out", "[embedding]") {
  const int64_t V = 9, D = 5;
  const Tensor ids = random_ids({3, 4}, V, 30);
  const Tensor table = rich_tensor({V, D}, 31);
  for (const NumericsPolicy& p :
       {policy({{"weights", "fp8_e4m3"}}), policy({{"weights", "bf16"}, {"out", "fp8_e5m2"}}),
        policy({{"format", "fp32"}})}) {
    Embedding m(V, D);
    m.apply_numerics(p);
    m.weight.copy_from(table);
    const LayerNumerics& nm = m.numerics();
    INFO(nm.describe());
    const std::vector<float> y = m.forward(ids).to_vector(), w = table.to_vector(), iv = ids.to_vector();
    std::vector<float> want;
    for (float id : iv)
      for (int64_t j = 0; j < D; ++j)
        want.push_back(quantize(nm.out(), quantize(nm.weights, w[static_cast<int64_t>(id) * D + j])));
    CHECK(mismatch(y, want) == "");
  }
}

TEST_CASE("embedding grad-weight sums repeated ids in ascending position order in the acc format",
          "[embedding]") {
  // Three lookups of id 3 with gradients 1, 2^-11, 2^-11. In e5m10 ascending order gives
  // (1 + 2^-11) + 2^-11 = 1 (each a tie to even); the other order would give 1 + 2^-10.
  Embedding m(5, 1);
  m.apply_numerics(policy({{"acc", "e5m10"}}));
  m.zero_grad();
  Tensor y = m.forward(ids_tensor({3}, {3, 3, 3}));
  y.backward(Tensor::from_vector({3, 1}, {1.0f, 0x1p-11f, 0x1p-11f}));
  CHECK(m.weight.grad().to_vector()[3] == 1.0f);
  m.zero_grad();
  y = m.forward(ids_tensor({3}, {3, 3, 3}));
  y.backward(Tensor::from_vector({3, 1}, {0x1p-11f, 0x1p-11f, 1.0f}));
  CHECK(m.weight.grad().to_vector()[3] == 1.0f + 0x1p-10f);
}

TEST_CASE("embedding grad-weight equals mac_reduce over the occurrences under emulated policies",
          "[embedding]") {
  const int64_t V = 11, D = 6;
  const Tensor ids = random_ids({4, 9}, V, 40);
  const Tensor gy = rich_tensor({4, 9, D}, 41);
  const NumericsPolicy policies[] = {
      policy({{"acc", "e5m10"}, {"grads", "bf16"}}),
      policy({{"acc", "bf16"}, {"chunk", "2"}, {"acc_outer", "e5m10"}, {"grads", "e5m10"}}),
      policy({{"acc", "fp64"}, {"grads", "fp8_e4m3"}}),
      policy({{"acc", "e5m10:sr"}, {"chunk", "3"}, {"acc_outer", "bf16:sr"}, {"grads", "bf16:sr"}}),
      policy({{"format", "fp32"}}),
  };
  for (const NumericsPolicy& p : policies) {
    for (int64_t pad : {-1, 4}) {
      Embedding m(V, D, pad);
      m.initialize(42);
      m.apply_numerics(p);
      m.context().seed = 77;
      m.context().step = 5;
      const LayerNumerics& nm = m.numerics();
      INFO(nm.describe() << " padding_idx " << pad);
      const EmbRun r = run_embedding(m, ids, gy);
      // The incoming gradient is read in the grads format (its :sr draws at the element index of ReadGrad).
      std::vector<float> g = gy.to_vector();
      const DrawKey read_key = draw_key(m, DrawSite::ReadGrad);
      for (size_t i = 0; i < g.size(); ++i)
        g[i] = quantize(nm.grads, g[i],
                        is_stochastic(nm.grads) ? philox_draw(read_key.seed, read_key.stream, i) : 0);
      const std::vector<float> want =
          literal_scatter(sum_mac(nm), ids.to_vector(), pad, g, 1, V, D, draw_key(m, DrawSite::GradWeight));
      CHECK(mismatch(r.gw, want) == "");
    }
  }
}

TEST_CASE("index_select gradients match finite differences in fp32 along every dim", "[index_select]") {
  Module m;
  const Tensor x0 = test::random_tensor({3, 4, 5}, 50);
  for (int dim : {0, 1, 2, -1}) {
    const int64_t S = x0.dim(dim);
    const Tensor index = ids_tensor({6}, {1, 0, static_cast<int>(S - 1), 1, 1, 2});  // repeats
    Tensor x = x0.clone().set_requires_grad(true);
    auto f = [&](const std::vector<Tensor>& in) { return index_select(m, in[0], dim, index); };
    const test::GradCheckResult r = test::grad_check(f, {x});
    INFO("dim " << dim << ": " << r.detail);
    CHECK(r.ok);
  }
}

TEST_CASE("index_select moves values and scatter-sums gradients in ascending position order",
          "[index_select]") {
  const Tensor x = rich_tensor({2, 7, 3}, 60);
  const Tensor index = random_ids({12}, 7, 61);
  const Tensor gy = rich_tensor({2, 12, 3}, 62);
  for (const NumericsPolicy& p : {policy({{"acc", "e5m10"}, {"grads", "bf16"}, {"activations", "fp8_e4m3"}}),
                                  policy({{"acc", "e5m10:sr"}, {"grads", "bf16"}, {"chunk", "2"}})}) {
    Module m;
    m.apply_numerics(p);
    m.context().seed = 9;
    const LayerNumerics& nm = m.numerics();
    INFO(nm.describe());
    Tensor xi = x.clone().set_requires_grad(true);
    Tensor y = index_select(m, xi, 1, index);
    REQUIRE(y.shape() == Shape{2, 12, 3});
    // No arithmetic forward: the selected values themselves (not rounded to the activations format).
    const std::vector<float> xv = x.to_vector(), iv = index.to_vector(), yv = y.to_vector();
    std::vector<float> want;
    for (int64_t a = 0; a < 2; ++a)
      for (float s : iv)
        for (int64_t b = 0; b < 3; ++b) want.push_back(xv[(a * 7 + static_cast<int64_t>(s)) * 3 + b]);
    CHECK(mismatch(yv, want) == "");
    y.backward(gy);
    std::vector<float> g = gy.to_vector();
    for (float& v : g) v = quantize(nm.grads, v);
    CHECK(mismatch(xi.grad().to_vector(),
                   literal_scatter(sum_mac(nm), iv, -1, g, 2, 7, 3, draw_key(m, DrawSite::GradInput))) == "");
  }
}

TEST_CASE("gather_rows and last_valid_step pick one step per sequence", "[index_select]") {
  Module m;
  const int64_t N = 3, T = 5, D = 4;
  const Tensor lengths = Tensor::from_vector({N}, {5, 1, 3});
  for (int time_dim : {1, 0}) {
    const Shape shape = time_dim == 1 ? Shape{N, T, D} : Shape{T, N, D};
    Tensor x = test::random_tensor(shape, 70).set_requires_grad(true);
    const Tensor y = last_valid_step(m, x, lengths, time_dim);
    REQUIRE(y.shape() == Shape{N, D});
    const std::vector<float> xv = x.to_vector(), yv = y.to_vector(), len = lengths.to_vector();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < D; ++j) {
        const int64_t t = static_cast<int64_t>(len[n]) - 1;
        const int64_t at = time_dim == 1 ? (n * T + t) * D + j : (t * N + n) * D + j;
        CHECK(test::bits(yv[n * D + j]) == test::bits(xv[at]));
      }
    auto f = [&](const std::vector<Tensor>& in) { return last_valid_step(m, in[0], lengths, time_dim); };
    const test::GradCheckResult r = test::grad_check(f, {x});
    INFO("time_dim " << time_dim << ": " << r.detail);
    CHECK(r.ok);
    auto g = [&](const std::vector<Tensor>& in) {
      return gather_rows(m, in[0], Tensor::from_vector({N}, {0, 4, 2}), time_dim);
    };
    const test::GradCheckResult r2 = test::grad_check(g, {x});
    INFO(r2.detail);
    CHECK(r2.ok);
  }
  const Tensor x = Tensor::zeros({N, T, D});
  CHECK_THROWS_WITH(last_valid_step(m, x, Tensor::from_vector({N}, {5, 0, 3})),
                    Catch::Contains("lengths[1]"));
  CHECK_THROWS_WITH(gather_rows(m, x, Tensor::from_vector({N}, {0, 5, 1})), Catch::Contains("positions[1]"));
  CHECK_THROWS_WITH(gather_rows(m, x, Tensor::from_vector({N}, {0, 1.5f, 1})),
                    Catch::Contains("not an integer"));
}

TEST_CASE("embedding and index_select reject bad ids", "[embedding]") {
  Embedding m(4, 2);
  CHECK_THROWS_WITH(m.forward(ids_tensor({2}, {1, 4})), Catch::Contains("index[1] = 4"));
  CHECK_THROWS_WITH(m.forward(Tensor::from_vector({1}, {-1.0f})), Catch::Contains("not an integer"));
  CHECK_THROWS_WITH(m.forward(Tensor::from_vector({1}, {0.5f})), Catch::Contains("not an integer"));
  CHECK_THROWS_AS(Embedding(4, 2, 4), std::invalid_argument);
  Module plain;
  CHECK_THROWS_WITH(index_select(plain, Tensor::zeros({2, 3}), 2, ids_tensor({1}, {0})),
                    Catch::Contains("dim 2"));
}

TEST_CASE("embedding and index_select give the same bits on 1 and 2 threads", "[embedding]") {
  const int64_t V = 300, D = 64;
  const Tensor ids = random_ids({32, 40}, V, 80);
  const Tensor gy = rich_tensor({32, 40, D}, 81);
  for (const NumericsPolicy& p :
       {policy({{"acc", "e5m10"}, {"grads", "bf16"}, {"out", "bf16"}}),
        policy({{"acc", "bf16:sr"}, {"chunk", "4"}}), policy({{"format", "fp32"}})}) {
    Embedding m(V, D, 0);
    m.initialize(82);
    m.apply_numerics(p);
    std::vector<EmbRun> runs;
    std::vector<std::vector<float>> gx;
    for (int threads : {1, 2}) {
      cpu_backend().set_threads(threads);
      runs.push_back(run_embedding(m, ids, gy));
      Tensor x = gy.clone().set_requires_grad(true);
      Tensor y = index_select(m, x, 1, random_ids({70}, 40, 83));
      y.backward(Tensor::full(y.shape(), 0.375f));
      gx.push_back(x.grad().to_vector());
    }
    cpu_backend().set_threads(0);
    CHECK(mismatch(runs[1].y, runs[0].y) == "");
    CHECK(mismatch(runs[1].gw, runs[0].gw) == "");
    CHECK(mismatch(gx[1], gx[0]) == "");
  }
}
