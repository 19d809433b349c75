// sparse_matmul, sparse_linear and GCNConv: gradients by finite differences in
// plain fp32, outputs bit for bit against `emutrain calc --batch` dot lines,
// reads in the documented formats, draw streams, caching, thread counts.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "calc/batch.h"
#include "core/autograd.h"
#include "layers/gcn.h"
#include "layers/layer_io.h"
#include "layers/linear.h"
#include "layers/sparse_matmul.h"
#include "numerics/format_spec.h"
#include "numerics/round.h"
#include "tests/grad_check.h"
#include "tests/test_util.h"

using namespace emu;

namespace {

std::string hex(float x) { return fmt::format("0x{:08x}", test::bits(x)); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A random undirected graph on v nodes (0/1, no self-loops), as data/dataset.h's "adj".
std::shared_ptr<const CsrMatrix> random_graph(int64_t v, int edges, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> r, c;
  for (int e = 0; e < edges; ++e) {
    const int64_t x = static_cast<int64_t>(rng() % v), y = static_cast<int64_t>(rng() % v);
    if (x == y) continue;
    r.push_back(x), c.push_back(y), r.push_back(y), c.push_back(x);
  }
  return std::make_shared<const CsrMatrix>(csr_from_coo(v, v, r, c, {}, CooDuplicates::Max));
}

// Sparse features: each element nonzero with probability d, values in [-1, 1] (binary when `binary`).
std::shared_ptr<const CsrMatrix> random_features(int64_t v, int64_t f, double d, uint64_t seed,
                                                 bool binary = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1), p(0, 1);
  std::vector<int64_t> r, c;
  std::vector<float> vals;
  for (int64_t i = 0; i < v; ++i)
    for (int64_t j = 0; j < f; ++j)
      if (p(rng) < d) {
        r.push_back(i), c.push_back(j), vals.push_back(binary ? 1.0f : u(rng));
      }
  return std::make_shared<const CsrMatrix>(csr_from_coo(v, f, r, c, vals));
}

std::vector<float> calc_lines(const std::string& lines) {
  std::istringstream input(lines);
  std::ostringstream output;
  REQUIRE(calc::run_calc_batch(input, output, 0) == 0);
  std::istringstream answers(output.str());
  std::vector<float> values;
  for (std::string a; std::getline(answers, a);) {
    const uint32_t u = static_cast<uint32_t>(std::stoul(a, nullptr, 16));
    float x;
    std::memcpy(&x, &u, 4);
    values.push_back(x);
  }
  return values;
}

struct ThreadCount {
  int saved = cpu_backend().threads();
  explicit ThreadCount(int n) { cpu_backend().set_threads(n); }
  ~ThreadCount() { cpu_backend().set_threads(saved); }
};

}  // namespace

TEST_CASE("sparse_matmul gradients match finite differences in fp32", "[gcn]") {
  auto m = std::make_shared<Module>();
  auto a = std::make_shared<const CsrMatrix>(csr_from_dense(test::random_tensor({6, 5}, 1)));
  auto sparse = random_features(7, 5, 0.4, 2);
  for (auto mat : {a, sparse}) {
    for (bool bias : {true, false}) {
      Tensor b = test::random_tensor({5, 3}, 3).set_requires_grad(true);
      Tensor bb = test::random_tensor({3}, 4).set_requires_grad(true);
      std::vector<Tensor> inputs = {b};
      if (bias) inputs.push_back(bb);
      auto f = [&](const std::vector<Tensor>& in) {
        return sparse_matmul(*m, mat, in[0], bias ? in[1] : Tensor());
      };
      auto r = test::grad_check(f, inputs);
      INFO(r.detail);
      CHECK(r.ok);
    }
  }
}

TEST_CASE("sparse_linear gradients match finite differences in fp32", "[gcn]") {
  auto m = std::make_shared<Module>();
  auto x = random_features(9, 6, 0.3, 5);
  Tensor w = test::random_tensor({4, 6}, 6).set_requires_grad(true);
  Tensor b = test::random_tensor({4}, 7).set_requires_grad(true);
  auto f = [&](const std::vector<Tensor>& in) { return sparse_linear(*m, x, in[0], in[1]); };
  auto r = test::grad_check(f, {w, b});
  INFO(r.detail);
  CHECK(r.ok);
  // Equal to linear() on the dense image in plain fp32: same reduction order, skipped zeros.
  Tensor dense = csr_to_dense(*x);
  CHECK(same_bits(sparse_linear(*m, x, w, b).to_vector(), linear(*m, dense, w, b).to_vector()));
}

TEST_CASE("GCNConv gradients match finite differences with dense and sparse features", "[gcn]") {
  auto adj = random_graph(10, 14, 8);
  for (bool bias : {true, false}) {
    GCNConvOptions o;
    o.bias = bias;
    auto conv = std::make_shared<GCNConv>(6, 4, o);
    conv->initialize(9);
    if (bias) conv->bias.copy_from(test::random_tensor({4}, 10));
    // Dense: x, weight, bias.
    Tensor x = test::random_tensor({10, 6}, 11).set_requires_grad(true);
    std::vector<Tensor> inputs = {x, conv->weight};
    if (bias) inputs.push_back(conv->bias);
    auto fd = [&](const std::vector<Tensor>& in) { return conv->forward(in[0], adj); };
    auto r = test::grad_check(fd, inputs);
    INFO("dense, bias " << bias << ": " << r.detail);
    CHECK(r.ok);
    // Sparse features: weight, bias.
    auto xs = random_features(10, 6, 0.35, 12);
    std::vector<Tensor> params = {conv->weight};
    if (bias) params.push_back(conv->bias);
    auto fs = [&](const std::vector<Tensor>&) { return conv->forward(xs, adj); };
    auto rs = test::grad_check(fs, params);
    INFO("sparse, bias " << bias << ": " << rs.detail);
    CHECK(rs.ok);
  }
}

TEST_CASE("GCNConv under mul e5m10 / acc e5m10 equals calc --batch dot lines", "[gcn]") {
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 8; ++trial) {
    const int64_t v = 6 + static_cast<int64_t>(rng() % 20), in = 1 + static_cast<int64_t>(rng() % 12),
                  out = 1 + static_cast<int64_t>(rng() % 5);
    const bool sparse = trial % 2 == 1;
    const int chunk = trial % 3 == 2 ? static_cast<int>(1 + rng() % 4) : 0;
    auto adj = random_graph(v, static_cast<int>(v * 2), 100 + trial);
    auto conv = std::make_shared<GCNConv>(in, out);
    conv->initialize(200 + trial);
    conv->bias.copy_from(test::random_tensor({out}, 300 + trial));
    NumericsPolicy policy = test::policy({{"mul", "e5m10"}, {"acc", "e5m10"}, {"out", "fp16"}});
    if (chunk) policy.set("chunk", std::to_string(chunk));
    conv->apply_numerics(policy);
    auto xs = random_features(v, in, 0.4, 400 + trial);
    Tensor xd = test::random_tensor({v, in}, 500 + trial, -4, 4);
    Tensor y = sparse ? conv->forward(xs, adj) : conv->forward(xd, adj);
    const std::string opts = chunk ? fmt::format(" chunk={} outer=fp32", chunk) : "";

    // Transform h = x W^T: over the in-features (dense) or the stored features (sparse), ascending.
    std::vector<float> w = conv->weight.to_vector(), xv = xd.to_vector(), xsv = xs->values.to_vector();
    std::string lines;
    for (int64_t i = 0; i < v; ++i)
      for (int64_t j = 0; j < out; ++j) {
        lines += "dot e5m10 e5m10 fp16" + opts;
        if (sparse) {
          for (int64_t e = xs->row_ptr[i]; e < xs->row_ptr[i + 1]; ++e)
            lines += " " + hex(xsv[e]) + " " + hex(w[j * in + xs->col_idx[e]]);
        } else {
          for (int64_t k = 0; k < in; ++k) lines += " " + hex(xv[i * in + k]) + " " + hex(w[j * in + k]);
        }
        if (sparse && xs->row_ptr[i] == xs->row_ptr[i + 1])
          lines += " 0 0";  // calc needs a term; 0 adds nothing
        lines += "\n";
      }
    const std::vector<float> h = calc_lines(lines);

    // Aggregation: neighbours in ascending source id (self-loop in its place), bias once at the end.
    auto p = conv->propagation(adj);
    const std::vector<float> pv = p->values.to_vector(), bv = conv->bias.to_vector();
    lines.clear();
    for (int64_t i = 0; i < v; ++i)
      for (int64_t j = 0; j < out; ++j) {
        lines += "dot e5m10 e5m10 fp16" + opts + " bias=" + hex(bv[j]);
        for (int64_t e = p->row_ptr[i]; e < p->row_ptr[i + 1]; ++e)
          lines += " " + hex(pv[e]) + " " + hex(h[p->col_idx[e] * out + j]);
        lines += "\n";
      }
    INFO("trial " << trial << " v " << v << " in " << in << " out " << out << " sparse " << sparse
                  << " chunk " << chunk);
    CHECK(test::mismatch(y.to_vector(), calc_lines(lines)) == "");
  }
}

TEST_CASE("GCNConv reads the normalised adjacency and the weights in `weights`, features in `activations`",
          "[gcn]") {
  auto adj = random_graph(12, 20, 31);
  auto conv = std::make_shared<GCNConv>(5, 3);
  conv->initialize(32);
  conv->bias.copy_from(test::random_tensor({3}, 33));
  Tensor x = test::random_tensor({12, 5}, 34, -3, 3);
  conv->apply_numerics(test::policy({{"weights", "fp8_e4m3"}, {"activations", "bf16"}}));
  const std::vector<float> y = conv->forward(x, adj).to_vector();

  // By hand: round Â, W, b to e4m3 and x to bf16, then a plain-fp32 layer whose
  // transform output is rounded to bf16 before the aggregation (its read).
  const Format e4m3 = parse_format("fp8_e4m3"), bf16 = parse_format("bf16");
  auto round_all = [](std::vector<float> v, const Format& f) {
    for (float& x : v) x = quantize(f, x);
    return v;
  };
  auto plain = std::make_shared<Module>();
  std::shared_ptr<const CsrMatrix> prop = conv->propagation(adj);
  auto prop_r = std::make_shared<const CsrMatrix>(
      csr_with_values(*prop, Tensor::from_vector({prop->nnz()}, round_all(prop->values.to_vector(), e4m3))));
  Tensor w_r = Tensor::from_vector({3, 5}, round_all(conv->weight.to_vector(), e4m3));
  Tensor b_r = Tensor::from_vector({3}, round_all(conv->bias.to_vector(), e4m3));
  Tensor x_r = Tensor::from_vector({12, 5}, round_all(x.to_vector(), bf16));
  Tensor h = linear(*plain, x_r, w_r, Tensor());
  Tensor h_r = Tensor::from_vector({12, 3}, round_all(h.to_vector(), bf16));
  CHECK(test::mismatch(y, sparse_matmul(*plain, prop_r, h_r, b_r).to_vector()) == "");
  // ... and not what an unrounded adjacency gives.
  CHECK_FALSE(same_bits(y, sparse_matmul(*plain, prop, h_r, b_r).to_vector()));

  // Sparse features are read in `activations` too (InputTimesParameter).
  auto xs = random_features(12, 5, 0.5, 35);
  auto m = std::make_shared<Module>();
  m->apply_numerics(test::policy({{"activations", "bf16"}}));
  auto xs_r = std::make_shared<const CsrMatrix>(
      csr_with_values(*xs, Tensor::from_vector({xs->nnz()}, round_all(xs->values.to_vector(), bf16))));
  CHECK(same_bits(sparse_linear(*m, xs, conv->weight).to_vector(),
                  sparse_linear(*plain, xs_r, conv->weight).to_vector()));
}

TEST_CASE("GCNConv under :sr: the aggregation draws from the stage-1 Forward stream", "[gcn]") {
  auto adj = random_graph(15, 25, 41);
  auto conv = std::make_shared<GCNConv>(4, 6);
  conv->initialize(42);
  conv->context().step = 7;
  conv->apply_numerics(test::policy({{"mul", "bf16:sr"}, {"acc", "e6m9:sr"}, {"out", "bf16:sr"}}));
  Tensor x = test::random_tensor({15, 4}, 43);
  const std::vector<float> y = conv->forward(x, adj).to_vector();
  // The transform is linear() with the layer's own keys (stage 0); the aggregation's op call:
  Tensor h = linear(*conv, x, conv->weight, Tensor());
  Tensor want = Tensor::zeros({15, 6});
  cpu_backend().spmm(conv->numerics().mac, *conv->propagation(adj), h, &conv->bias, want,
                     nn_stage_key(draw_key(*conv, DrawSite::Forward), 1));
  CHECK(test::mismatch(y, want.to_vector()) == "");
  Tensor other = Tensor::zeros({15, 6});
  cpu_backend().spmm(conv->numerics().mac, *conv->propagation(adj), h, &conv->bias, other,
                     draw_key(*conv, DrawSite::Forward));
  CHECK_FALSE(same_bits(y, other.to_vector()));
  // A new step draws new bits; the same step the same bits.
  CHECK(same_bits(y, conv->forward(x, adj).to_vector()));
  conv->context().step = 8;
  CHECK_FALSE(same_bits(y, conv->forward(x, adj).to_vector()));
}

TEST_CASE("GCNConv caches the normalised adjacency only when asked", "[gcn]") {
  auto a1 = random_graph(8, 10, 51), a2 = random_graph(8, 10, 52), a3 = random_graph(9, 10, 53);
  GCNConvOptions cached;
  cached.cached = true;
  auto c = std::make_shared<GCNConv>(3, 2, cached);
  auto p1 = c->propagation(a1);
  CHECK(c->propagation(a2) == p1);
  CHECK_THROWS_WITH(c->propagation(a3), Catch::Contains("after a cached 8 x 8"));
  c->clear_cache();
  CHECK(c->propagation(a2) != p1);
  auto u = std::make_shared<GCNConv>(3, 2);
  CHECK(u->propagation(a1) != u->propagation(a1));
  CHECK(same_bits(u->propagation(a1)->values.to_vector(), p1->values.to_vector()));
  GCNConvOptions raw;
  raw.normalize = false;
  auto r = std::make_shared<GCNConv>(3, 2, raw);
  CHECK(r->propagation(a1) == a1);
  CHECK_THROWS_WITH(r->propagation(std::make_shared<const CsrMatrix>(csr_from_dense(Tensor::zeros({2, 3})))),
                    Catch::Contains("not square"));
  Tensor x = Tensor::zeros({7, 3});
  CHECK_THROWS_WITH(u->forward(x, a1), Catch::Contains("7 nodes in the features, 8 in the adjacency"));
  CHECK_THROWS_WITH(u->forward(Tensor::zeros({8, 4}), a1), Catch::Contains("expected (nodes, 3)"));
}

TEST_CASE("GCNConv forward and backward give the same bits on 1 and 3 threads", "[gcn]") {
  auto adj = random_graph(400, 1500, 61);
  auto xs = random_features(400, 300, 0.02, 62, true);
  Tensor xd = test::random_tensor({400, 30}, 63);
  for (const char* spec : {"fp32", "bf16", "bf16:sr"}) {
    for (bool sparse : {false, true}) {
      auto run = [&](int threads) {
        ThreadCount tc(threads);
        auto conv = std::make_shared<GCNConv>(sparse ? 300 : 30, 16);
        conv->initialize(64);
        conv->apply_numerics(test::policy({{"format", spec}}));
        Tensor x = xd.clone().set_requires_grad(!sparse);
        Tensor y = sparse ? conv->forward(xs, adj) : conv->forward(x, adj);
        y.backward(test::random_tensor(y.shape(), 65));
        std::vector<float> all = y.to_vector();
        for (const Tensor& t : {conv->weight.grad(), conv->bias.grad()}) {
          std::vector<float> g = t.to_vector();
          all.insert(all.end(), g.begin(), g.end());
        }
        if (!sparse) {
          std::vector<float> g = x.grad().to_vector();
          all.insert(all.end(), g.begin(), g.end());
        }
        return all;
      };
      INFO(spec << " sparse " << sparse);
      CHECK(same_bits(run(1), run(3)));
    }
  }
}
