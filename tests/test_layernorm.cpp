// LayerNorm (layers/layernorm.h):
//  - finite-difference gradients in plain fp32, with and without the affine part;
//  - plain fp32 values against a float64 reference;
//  - forward and backward under emulated formats equal, bit for bit, literal
//    loops of the steps in core/backend_ops_attention.h (mac_reduce for the
//    sums, numerics/round.h for every element-wise step, fn_rsqrt), with chunks,
//    wide accumulators, posits and stochastic rounding (draw sites included);
//  - thread counts change no bit.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/autograd.h"
#include "layers/layer_io.h"
#include "layers/layernorm.h"
#include "numerics/functions.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/grad_check.h"
#include "tests/test_util.h"

using namespace emu;
using emu::test::mismatch;
using emu::test::policy;

namespace {

// Values over 4 binades around 1, 5% zeros (test_util.h rich_tensor).
Tensor rich_tensor(const Shape& shape, uint64_t seed, double zero_fraction = 0.05) {
  return test::rich_tensor(shape, seed, {zero_fraction, 4, -2, false});
}

uint32_t drw(const Format& f, DrawKey key, uint32_t stage, uint64_t index) {
  return is_stochastic(f) ? philox_draw(key.seed, key.stream + stage, index) : 0;
}

// mac_reduce of K terms (b null: every b_k = 1, mul exact) left in the last
// accumulator's format, drawing at stage `stage`, output o.
double literal_reduce(MacPolicy p, bool sum, const float* a, const float* b, int64_t K, DrawKey key,
                      uint32_t stage, uint64_t o) {
  if (sum) p.mul_exact = true;
  p.out = p.chunk > 0 ? p.acc_outer : p.acc;
  const std::vector<float> ones(static_cast<size_t>(K), 1.0f);
  const uint64_t base = o * mac_site_count(K, p.chunk);
  auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream + stage, base + site); };
  return mac_reduce(p, a, sum ? ones.data() : b, K, nullptr, draw);
}

struct LnRef {
  std::vector<float> y, xhat, invstd;
};

// The forward steps of core/backend_ops_attention.h, one row at a time.
LnRef literal_forward(const LayerNumerics& n, int64_t R, int64_t D, const std::vector<float>& x,
                      const std::vector<float>& gamma, const std::vector<float>& beta, float eps,
                      DrawKey key) {
  const Format& out = n.out();
  LnRef ref;
  ref.y.resize(x.size());
  ref.xhat.resize(x.size());
  for (int64_t r = 0; r < R; ++r) {
    const uint64_t ur = static_cast<uint64_t>(r);
    std::vector<float> xr(static_cast<size_t>(D)), d(static_cast<size_t>(D));
    for (int64_t k = 0; k < D; ++k) xr[k] = quantize(n.activations, x[r * D + k]);
    const double s1 = literal_reduce(n.mac, true, xr.data(), nullptr, D, key, 0, ur);
    const float mean = static_cast<float>(format_div(out, s1, static_cast<double>(D), drw(out, key, 1, ur)));
    for (int64_t k = 0; k < D; ++k)
      d[k] = static_cast<float>(
          format_sub(out, xr[k], mean, drw(out, key, 2, static_cast<uint64_t>(r * D + k))));
    const double s2 = literal_reduce(n.mac, false, d.data(), d.data(), D, key, 3, ur);
    const float var = static_cast<float>(format_div(out, s2, static_cast<double>(D), drw(out, key, 4, ur)));
    const float ve = static_cast<float>(format_add(out, var, eps, drw(out, key, 5, ur)));
    const float inv = static_cast<float>(round_value(out, fn_rsqrt(ve), drw(out, key, 6, ur)));
    ref.invstd.push_back(inv);
    for (int64_t k = 0; k < D; ++k) {
      const uint64_t i = static_cast<uint64_t>(r * D + k);
      const float h = static_cast<float>(format_mul(out, d[k], inv, drw(out, key, 7, i)));
      float v = h;
      if (!gamma.empty())
        v = static_cast<float>(format_mul(out, v, quantize(n.weights, gamma[k]), drw(out, key, 8, i)));
      if (!beta.empty())
        v = static_cast<float>(format_add(out, v, quantize(n.weights, beta[k]), drw(out, key, 9, i)));
      ref.xhat[i] = h;
      ref.y[i] = v;
    }
  }
  return ref;
}

struct LnGrads {
  std::vector<float> gx, ggamma, gbeta;
};

LnGrads literal_backward(const LayerNumerics& n, int64_t R, int64_t D, const std::vector<float>& gy_in,
                         const LnRef& fwd, const std::vector<float>& gamma, DrawKey key) {
  const Format& G = n.grads;
  MacPolicy p = n.mac;
  p.out = G;
  std::vector<float> gy(gy_in.size());
  for (size_t i = 0; i < gy.size(); ++i) gy[i] = quantize(G, gy_in[i]);
  LnGrads g;
  g.gx.resize(gy.size());
  for (int64_t r = 0; r < R; ++r) {
    const uint64_t ur = static_cast<uint64_t>(r);
    std::vector<float> gh(static_cast<size_t>(D));
    for (int64_t k = 0; k < D; ++k) {
      const uint64_t i = static_cast<uint64_t>(r * D + k);
      gh[k] =
          gamma.empty()
              ? gy[i]
              : static_cast<float>(format_mul(G, gy[i], quantize(n.weights, gamma[k]), drw(G, key, 0, i)));
    }
    const double sg = literal_reduce(p, true, gh.data(), nullptr, D, key, 1, ur);
    const double sgx = literal_reduce(p, false, gh.data(), fwd.xhat.data() + r * D, D, key, 2, ur);
    const float mg = static_cast<float>(format_div(G, sg, static_cast<double>(D), drw(G, key, 3, ur)));
    const float mgx = static_cast<float>(format_div(G, sgx, static_cast<double>(D), drw(G, key, 4, ur)));
    for (int64_t k = 0; k < D; ++k) {
      const uint64_t i = static_cast<uint64_t>(r * D + k);
      const double t = format_sub(G, gh[k], mg, drw(G, key, 5, i));
      const double u = format_mul(G, fwd.xhat[i], mgx, drw(G, key, 6, i));
      const double v = format_sub(G, t, u, drw(G, key, 7, i));
      g.gx[i] = static_cast<float>(format_mul(G, v, fwd.invstd[r], drw(G, key, 8, i)));
    }
  }
  for (int64_t c = 0; c < D; ++c) {
    std::vector<float> gcol, hcol;
    for (int64_t r = 0; r < R; ++r) {
      gcol.push_back(gy[r * D + c]);
      hcol.push_back(fwd.xhat[r * D + c]);
    }
    const uint64_t uc = static_cast<uint64_t>(c);
    const double sgx = literal_reduce(p, false, gcol.data(), hcol.data(), R, key, 9, uc);
    const double sg = literal_reduce(p, true, gcol.data(), nullptr, R, key, 10, uc);
    g.ggamma.push_back(static_cast<float>(round_value(G, sgx, drw(G, key, 11, uc))));
    g.gbeta.push_back(static_cast<float>(round_value(G, sg, drw(G, key, 12, uc))));
  }
  return g;
}

std::vector<NumericsPolicy> ln_policies() {
  return {policy({{"mul", "e5m10"}, {"acc", "e5m10"}, {"out", "bf16"}, {"grads", "bf16"}}),
          policy({{"format", "fp32"}}),
          policy({{"mul", "exact"}}),  // exact products into an fp32 accumulator
          policy({{"format", "bf16"}, {"acc", "fp64"}, {"chunk", "7"}, {"acc_outer", "fp32"}}),
          policy({{"mul", "exact"},
                  {"acc", "fp16"},
                  {"chunk", "5"},
                  {"acc_outer", "e5m10"},
                  {"out", "e4m3"},
                  {"grads", "fp16"},
                  {"activations", "bf16"},
                  {"weights", "bf16"}}),
          policy({{"mul", "e6m6:rtz"}, {"acc", "e8m12:rup"}, {"out", "fp8_e4m3"}, {"grads", "e5m2:rdn"}}),
          policy({{"mul", "e5m10:sr"},
                  {"acc", "bf16:sr"},
                  {"chunk", "4"},
                  {"acc_outer", "e5m10:sr"},
                  {"out", "fp16:sr"}}),
          policy({{"mul", "posit16_1"}, {"acc", "posit16_1"}, {"out", "posit16_1"}, {"grads", "posit16_1"}})};
}

}  // namespace

TEST_CASE("LayerNorm gradients match finite differences in fp32", "[layernorm]") {
  struct Case {
    bool affine, bias;
  };
  for (Case c : {Case{true, true}, Case{true, false}, Case{false, false}}) {
    LayerNorm ln(6, 1e-5f, c.affine, c.bias);
    ln.initialize(3);
    std::vector<Tensor> inputs = {test::random_tensor({2, 3, 6}, 11, -2, 2).set_requires_grad(true)};
    if (c.affine) {
      ln.weight.copy_from(test::random_tensor({6}, 12, 0.5f, 1.5f));
      inputs.push_back(ln.weight);
    }
    if (c.bias) {
      ln.bias.copy_from(test::random_tensor({6}, 13));
      inputs.push_back(ln.bias);
    }
    auto r = test::grad_check([&](const std::vector<Tensor>& in) { return ln.forward(in[0]); }, inputs);
    INFO("affine " << c.affine << " bias " << c.bias << ": " << r.detail);
    CHECK(r.ok);
  }
}

TEST_CASE("LayerNorm in fp32 agrees with a float64 reference", "[layernorm]") {
  const int64_t R = 5, D = 33;
  const Tensor x = test::random_tensor({R, D}, 21, -3, 5);
  LayerNorm ln(D, 1e-5f);
  ln.weight.copy_from(test::random_tensor({D}, 22));
  ln.bias.copy_from(test::random_tensor({D}, 23));
  const std::vector<float> y = ln.forward(x).to_vector(), xv = x.to_vector();
  const std::vector<float> g = ln.weight.to_vector(), b = ln.bias.to_vector();
  for (int64_t r = 0; r < R; ++r) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < D; ++k) mean += xv[r * D + k];
    mean /= D;
    for (int64_t k = 0; k < D; ++k) var += (xv[r * D + k] - mean) * (xv[r * D + k] - mean);
    var /= D;
    for (int64_t k = 0; k < D; ++k) {
      const double want = (xv[r * D + k] - mean) / std::sqrt(var + 1e-5) * g[k] + b[k];
      INFO("row " << r << " feature " << k);
      CHECK(std::fabs(y[r * D + k] - want) <= 1e-5 * (1 + std::fabs(want)));
    }
  }
  // A constant row normalises to 0: y = beta exactly.
  const Tensor flat = Tensor::full({1, D}, 3.75f);
  CHECK(mismatch(ln.forward(flat).to_vector(), b) == "");
}

TEST_CASE("LayerNorm forward and backward equal the literal steps", "[layernorm]") {
  const int64_t R = 7, D = 19;
  const Tensor x = rich_tensor({R, D}, 31);
  const Tensor gy = rich_tensor({R, D}, 32);
  const std::vector<float> gamma = rich_tensor({D}, 33, 0).to_vector(),
                           beta = rich_tensor({D}, 34, 0).to_vector();
  for (const NumericsPolicy& p : ln_policies()) {
    for (bool affine : {true, false}) {
      LayerNorm ln(D, 1e-5f, affine);
      ln.apply_numerics(p);
      ln.context().seed = 77;
      ln.context().step = 3;
      const LayerNumerics& n = ln.numerics();
      INFO(n.describe() << " affine " << affine);
      if (affine) {
        ln.weight.copy_from(Tensor::from_vector({D}, gamma));
        ln.bias.copy_from(Tensor::from_vector({D}, beta));
      }
      Tensor xi = x.clone().view({1, R, D});
      xi.set_requires_grad(true);
      Tensor y = ln.forward(xi);
      const std::vector<float> g0 = affine ? gamma : std::vector<float>(),
                               b0 = affine ? beta : std::vector<float>();
      const LnRef ref =
          literal_forward(n, R, D, x.to_vector(), g0, b0, 1e-5f, draw_key(ln, DrawSite::Forward));
      CHECK(mismatch(y.to_vector(), ref.y) == "");
      y.backward(gy.view({1, R, D}));
      const LnGrads g = literal_backward(n, R, D, gy.to_vector(), ref, g0, draw_key(ln, DrawSite::GradInput));
      CHECK(mismatch(xi.grad().to_vector(), g.gx) == "");
      if (affine) {
        CHECK(mismatch(ln.weight.grad().to_vector(), g.ggamma) == "");
        CHECK(mismatch(ln.bias.grad().to_vector(), g.gbeta) == "");
      }
    }
  }
}

TEST_CASE("LayerNorm with stochastic rounding draws per step and not per thread", "[layernorm]") {
  const int64_t R = 64, D = 48;
  const Tensor x = rich_tensor({R, D}, 41), gy = rich_tensor({R, D}, 42);
  LayerNorm ln(D);
  ln.apply_numerics(
      policy({{"mul", "e5m10:sr"}, {"acc", "bf16:sr"}, {"out", "fp16:sr"}, {"grads", "bf16:sr"}}));
  ln.bias.copy_from(rich_tensor({D}, 43));
  auto run = [&](int threads) {
    cpu_backend().set_threads(threads);
    Tensor xi = x.clone();
    xi.set_requires_grad(true);
    ln.zero_grad();
    Tensor y = ln.forward(xi);
    y.backward(gy);
    std::vector<float> all = y.to_vector(), gx = xi.grad().to_vector(), gw = ln.weight.grad().to_vector();
    all.insert(all.end(), gx.begin(), gx.end());
    all.insert(all.end(), gw.begin(), gw.end());
    return all;
  };
  const std::vector<float> one = run(1), three = run(3);
  cpu_backend().set_threads(0);
  CHECK(mismatch(one, three) == "");
  ln.context().step = 1;
  CHECK(mismatch(run(0), one) != "");
}

TEST_CASE("LayerNorm under layer-level emulation rounds only the result", "[layernorm]") {
  const int64_t D = 10;
  const Tensor x = rich_tensor({4, D}, 51);
  LayerNorm plain(D), layer(D);
  NumericsPolicy p = policy({{"format", "e4m3"}});
  p.set("emulation", "layer");
  layer.apply_numerics(p);
  std::vector<float> want = plain.forward(x).to_vector();
  for (float& v : want) v = quantize(layer.numerics().out(), v);
  CHECK(mismatch(layer.forward(x).to_vector(), want) == "");
}

TEST_CASE("LayerNorm rejects inputs it cannot normalise", "[layernorm]") {
  LayerNorm ln(4);
  CHECK_THROWS_AS(ln.forward(Tensor::zeros({2, 5})), std::invalid_argument);
  CHECK_THROWS_AS(LayerNorm(0), std::invalid_argument);
  CHECK_THROWS_AS(LayerNorm(3, 0.0f), std::invalid_argument);
}
