// Global pooling over time (layers/temporal_pool.h, backends/cpu/sequence_ops.cpp):
//  - finite-difference gradients in plain fp32, (N, C, L) and (N, L, C), with and without masks;
//  - unmasked, the bits of AdaptiveAvgPool2d(1) and MaxPool2d((1, L)) on (N, C, 1, L), forward and
//    backward, under emulated policies (chunks, :sr);
//  - masked, the documented arithmetic written out (mac_reduce over the valid steps ascending, the exact
//    quotient rounded once through format_div, the draws), bit for bit;
//  - plain fp32 against a float64 reference; identical bits on 1 and 2 threads; errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/autograd.h"
#include "layers/layer_io.h"
#include "layers/pool.h"
#include "layers/temporal_pool.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/grad_check.h"
#include "tests/test_util.h"

using namespace emu;
using emu::test::mismatch;
using emu::test::policy;

namespace {

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

// Distinct values 0.05 apart (shuffled): finite differences with h = 0.01 never change the maximum.
Tensor spaced_tensor(const Shape& shape, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * static_cast<float>(i) - 1.0f;
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  return Tensor::from_vector(shape, v);
}

std::vector<float> quantized_copy(const Format& f, const Tensor& x) {
  std::vector<float> v = x.to_vector();
  for (float& e : v) e = quantize(f, e);
  return v;
}

// N lengths in [1, L].
Tensor random_lengths(int64_t N, int64_t L, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(static_cast<size_t>(N));
  for (float& e : v) e = static_cast<float>(1 + rng() % static_cast<uint64_t>(L));
  return Tensor::from_vector({N}, v);
}

// (N, C, L) <-> (N, L, C).
Tensor swap_last(const Tensor& x) { return x.transpose(1, 2).contiguous(); }

std::vector<float> read_grads(const Module& m, const Tensor& gy) {
  const LayerNumerics& nm = m.numerics();
  const DrawKey key = draw_key(m, DrawSite::ReadGrad);
  std::vector<float> g = gy.to_vector();
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = quantize(nm.grads, g[i], is_stochastic(nm.grads) ? philox_draw(key.seed, key.stream, i) : 0);
  return g;
}

uint32_t draw_at(const Format& f, DrawKey key, uint64_t stage, uint64_t index) {
  return is_stochastic(f) ? philox_draw(key.seed, key.stream + stage, index) : 0;
}

// mac_reduce with mul exact over `terms` (b = 1), left in the last accumulator's format (out = acc or
// acc_outer), draws at o * mac_site_count(K_sites, chunk) + site of stream key.stream + stage.
double sum_terms(const MacPolicy& p, const std::vector<float>& terms, int64_t K_sites, DrawKey key,
                 uint64_t stage, uint64_t o) {
  MacPolicy sp = p;
  sp.mul_exact = true;
  sp.out = p.chunk > 0 ? p.acc_outer : p.acc;
  const std::vector<float> ones(terms.size(), 1.0f);
  const uint64_t base = o * mac_site_count(K_sites, p.chunk);
  auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream + stage, base + site); };
  return mac_reduce(sp, terms.data(), ones.data(), static_cast<int64_t>(terms.size()), nullptr, draw);
}

// R_out of a one-term sum of q (site stride 1), as the backward of every global pool defines it.
float one_term(const MacPolicy& p, float q, DrawKey key, uint64_t stage, uint64_t i) {
  const float one = 1.0f;
  MacPolicy sp = p;
  sp.mul_exact = true;
  const uint64_t base = i * mac_site_count(1, p.chunk);
  auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream + stage, base + site); };
  return static_cast<float>(mac_reduce(sp, &q, &one, 1, nullptr, draw));
}

struct PoolRun {
  std::vector<float> y, gx;
};

PoolRun run_pool(bool max, const Module& m, const Tensor& x_values, int dim, const Tensor& mask,
                 const Tensor& gy) {
  Tensor x = x_values.clone().set_requires_grad(true);
  Tensor y = max ? temporal_max_pool(m, x, dim, mask) : temporal_avg_pool(m, x, dim, mask);
  y.backward(gy);
  return {y.to_vector(), x.grad().to_vector()};
}

const NumericsPolicy& emulated(int i) {
  static const NumericsPolicy policies[] = {
      policy({{"acc", "e5m10"}, {"out", "bf16"}, {"grads", "bf16"}}),
      policy(
          {{"acc", "bf16"}, {"chunk", "3"}, {"acc_outer", "e5m10"}, {"out", "e5m10"}, {"grads", "fp8_e5m2"}}),
      policy({{"acc", "fp64"}, {"out", "fp16"}, {"activations", "bf16"}}),
      policy({{"acc", "e5m10:sr"},
              {"chunk", "2"},
              {"acc_outer", "bf16:sr"},
              {"out", "bf16:sr"},
              {"grads", "e5m10:sr"}}),
      policy({{"format", "fp32"}}),
  };
  return policies[i];
}
constexpr int kPolicies = 5;

}  // namespace

TEST_CASE("temporal pool gradients match finite differences in fp32", "[temporal_pool]") {
  Module m;
  const int64_t N = 3, C = 4, L = 6;
  const Tensor lengths = Tensor::from_vector({N}, {6, 2, 4});
  Tensor scattered = Tensor::from_vector({N, L}, {1, 0, 1, 1, 0, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
  for (bool max : {false, true})
    for (int dim : {2, 1})
      for (const Tensor& mask : {Tensor(), lengths_mask(lengths, L), scattered}) {
        const Shape shape = dim == 2 ? Shape{N, C, L} : Shape{N, L, C};
        Tensor x = spaced_tensor(shape, 90).set_requires_grad(true);
        auto f = [&](const std::vector<Tensor>& in) {
          return max ? temporal_max_pool(m, in[0], dim, mask) : temporal_avg_pool(m, in[0], dim, mask);
        };
        const test::GradCheckResult r = test::grad_check(f, {x});
        INFO((max ? "max" : "avg") << " dim " << dim << (mask.defined() ? " masked" : "") << ": "
                                   << r.detail);
        CHECK(r.ok);
      }
}

TEST_CASE("unmasked temporal avg pool gives the bits of AdaptiveAvgPool2d(1) on (N, C, 1, L)",
          "[temporal_pool]") {
  const int64_t N = 3, C = 5, L = 13;
  const Tensor x = rich_tensor({N, C, L}, 100);
  const Tensor gy = rich_tensor({N, C}, 101);
  for (int i = 0; i < kPolicies; ++i) {
    const NumericsPolicy& p = emulated(i);
    TemporalAvgPool pool(2);
    AdaptiveAvgPool2d adaptive(1);
    for (Module* m : {static_cast<Module*>(&pool), static_cast<Module*>(&adaptive)}) {
      m->apply_numerics(p);
      m->context().seed = 11;
      m->context().step = 4;
    }
    INFO(pool.numerics().describe());
    const PoolRun a = run_pool(false, pool, x, 2, Tensor(), gy);
    Tensor x4 = x.clone().view({N, C, 1, L}).set_requires_grad(true);
    Tensor y4 = adaptive.forward(x4);
    y4.backward(gy.view({N, C, 1, 1}));
    CHECK(mismatch(a.y, y4.to_vector()) == "");
    CHECK(mismatch(a.gx, x4.grad().to_vector()) == "");
    // (N, L, C): the same outputs; the same gradients, transposed, where no draw depends on the layout.
    const PoolRun b = run_pool(false, pool, swap_last(x), 1, Tensor(), gy);
    CHECK(mismatch(b.y, a.y) == "");
    if (!is_stochastic(pool.numerics().grads))
      CHECK(mismatch(swap_last(Tensor::from_vector({N, L, C}, b.gx)).to_vector(), a.gx) == "");
  }
}

TEST_CASE("unmasked temporal max pool gives the bits of MaxPool2d((1, L)) on (N, C, 1, L)",
          "[temporal_pool]") {
  const int64_t N = 2, C = 6, L = 9;
  Tensor x = rich_tensor({N, C, L}, 110);
  x.data()[3] = x.data()[5] = 100.0f;  // a tie above every other value: the earliest step wins
  x.data()[L + 2] = std::nanf("");     // a NaN wins
  Tensor gy = rich_tensor({N, C}, 111);
  gy.data()[0] = 0.5f;
  for (int i = 0; i < kPolicies; ++i) {
    const NumericsPolicy& p = emulated(i);
    TemporalMaxPool pool(2);
    MaxPool2d max2d(Size2(1, L));
    pool.apply_numerics(p);
    max2d.apply_numerics(p);
    INFO(pool.numerics().describe());
    const PoolRun a = run_pool(true, pool, x, 2, Tensor(), gy);
    Tensor x4 = x.clone().view({N, C, 1, L}).set_requires_grad(true);
    Tensor y4 = max2d.forward(x4);
    y4.backward(gy.view({N, C, 1, 1}));
    CHECK(mismatch(a.y, y4.to_vector()) == "");
    CHECK(mismatch(a.gx, x4.grad().to_vector()) == "");
    CHECK(a.gx[3] != 0.0f);  // only the earliest of the tied steps gets the gradient
    CHECK(a.gx[5] == 0.0f);
    CHECK(std::isnan(a.y[1]));
  }
}

TEST_CASE("masked temporal avg pool equals the written-out arithmetic", "[temporal_pool]") {
  const int64_t N = 4, C = 3, L = 11;
  const Tensor mask = Tensor::from_vector({N, L}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    // every step
                                                   1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0,    // length 3
                                                   0, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1,    // scattered
                                                   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});  // one step
  const Tensor gy = rich_tensor({N, C}, 121);
  const std::vector<float> mv = mask.to_vector();
  for (int dim : {2, 1}) {
    const Shape shape = dim == 2 ? Shape{N, C, L} : Shape{N, L, C};
    const Tensor x = rich_tensor(shape, 120);
    auto at = [&](int64_t n, int64_t c, int64_t t) {
      return dim == 2 ? (n * C + c) * L + t : (n * L + t) * C + c;
    };
    for (int i = 0; i < kPolicies; ++i) {
      TemporalAvgPool pool(dim);
      pool.apply_numerics(emulated(i));
      pool.context().seed = 12;
      const LayerNumerics& nm = pool.numerics();
      INFO("dim " << dim << " " << nm.describe());
      REQUIRE(!is_stochastic(nm.activations));
      const PoolRun r = run_pool(false, pool, x, dim, mask, gy);
      const std::vector<float> xv = quantized_copy(nm.activations, x);
      const std::vector<float> g = read_grads(pool, gy);
      const DrawKey fk = draw_key(pool, DrawSite::Forward), bk = draw_key(pool, DrawSite::GradInput);
      const MacPolicy bp = backward_mac(nm);
      std::vector<float> y(static_cast<size_t>(N * C)), gx(xv.size(), 0.0f);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const uint64_t o = static_cast<uint64_t>(n * C + c);
          std::vector<float> terms;
          for (int64_t t = 0; t < L; ++t)
            if (mv[n * L + t] != 0.0f) terms.push_back(xv[at(n, c, t)]);
          const double cnt = static_cast<double>(terms.size());
          const double S = sum_terms(nm.mac, terms, L, fk, 0, o);
          y[o] = static_cast<float>(format_div(nm.out(), S, cnt, draw_at(nm.out(), fk, 1, o)));
          const float q = static_cast<float>(format_div(nm.grads, g[o], cnt, draw_at(nm.grads, bk, 0, o)));
          for (int64_t t = 0; t < L; ++t)
            if (mv[n * L + t] != 0.0f)
              gx[at(n, c, t)] = one_term(bp, q, bk, 1, static_cast<uint64_t>(at(n, c, t)));
        }
      CHECK(mismatch(r.y, y) == "");
      CHECK(mismatch(r.gx, gx) == "");
    }
  }
}

TEST_CASE("masked temporal max pool equals the written-out arithmetic", "[temporal_pool]") {
  const int64_t N = 3, C = 4, L = 7;
  const Tensor lengths = Tensor::from_vector({N}, {7, 3, 1});
  const Tensor mask = lengths_mask(lengths, L);
  const Tensor gy = rich_tensor({N, C}, 131);
  const std::vector<float> mv = mask.to_vector();
  for (int dim : {2, 1}) {
    const Shape shape = dim == 2 ? Shape{N, C, L} : Shape{N, L, C};
    const Tensor x = rich_tensor(shape, 130);
    auto at = [&](int64_t n, int64_t c, int64_t t) {
      return dim == 2 ? (n * C + c) * L + t : (n * L + t) * C + c;
    };
    for (int i = 0; i < kPolicies; ++i) {
      TemporalMaxPool pool(dim);
      pool.apply_numerics(emulated(i));
      pool.context().seed = 13;
      const LayerNumerics& nm = pool.numerics();
      INFO("dim " << dim << " " << nm.describe());
      const PoolRun r = run_pool(true, pool, x, dim, mask, gy);
      const std::vector<float> xv = quantized_copy(nm.activations, x);
      const std::vector<float> g = read_grads(pool, gy);
      const DrawKey fk = draw_key(pool, DrawSite::Forward), bk = draw_key(pool, DrawSite::GradInput);
      std::vector<float> y(static_cast<size_t>(N * C)), gx(xv.size(), 0.0f);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const uint64_t o = static_cast<uint64_t>(n * C + c);
          int64_t best = -1;
          for (int64_t t = 0; t < L; ++t)
            if (mv[n * L + t] != 0.0f && (best < 0 || xv[at(n, c, t)] > xv[at(n, c, best)])) best = t;
          y[o] = quantize(nm.out(), xv[at(n, c, best)], draw_at(nm.out(), fk, 0, o));
          gx[at(n, c, best)] = one_term(backward_mac(nm), g[o], bk, 0, static_cast<uint64_t>(at(n, c, best)));
        }
      CHECK(mismatch(r.y, y) == "");
      CHECK(mismatch(r.gx, gx) == "");
    }
  }
}

TEST_CASE("temporal pools in plain fp32 match a float64 reference", "[temporal_pool]") {
  Module m;
  const int64_t N = 5, C = 7, L = 40;
  const Tensor lengths = Tensor::from_vector({N}, {40, 1, 17, 39, 8});
  const Tensor mask = lengths_mask(lengths, L);
  const std::vector<float> len = lengths.to_vector();
  for (int dim : {2, 1}) {
    const Shape shape = dim == 2 ? Shape{N, C, L} : Shape{N, L, C};
    const Tensor x = test::random_tensor(shape, 140, -3, 5);
    const Tensor gy = test::random_tensor({N, C}, 141);
    auto at = [&](int64_t n, int64_t c, int64_t t) {
      return dim == 2 ? (n * C + c) * L + t : (n * L + t) * C + c;
    };
    const PoolRun avg = run_pool(false, m, x, dim, mask, gy), mx = run_pool(true, m, x, dim, mask, gy);
    const std::vector<float> xv = x.to_vector(), g = gy.to_vector();
    int bad = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0, abs_sum = 0, best = -1e300;
        const int64_t cnt = static_cast<int64_t>(len[n]);
        for (int64_t t = 0; t < cnt; ++t) {
          sum += xv[at(n, c, t)];
          abs_sum += std::fabs(xv[at(n, c, t)]);
          best = std::max(best, static_cast<double>(xv[at(n, c, t)]));
        }
        const double mean = sum / static_cast<double>(cnt);
        // Sequential binary32 sum: |error| <= (cnt - 1) u sum|x| (u = 2^-24); divided by cnt, then one
        // rounding of the quotient.
        bad += std::fabs(avg.y[n * C + c] - mean) > 0x1p-24 * (abs_sum + 2 * std::fabs(mean)) + 1e-30;
        bad += mx.y[n * C + c] != best;
        const double q = static_cast<double>(g[n * C + c]) / static_cast<double>(cnt);
        for (int64_t t = 0; t < L; ++t) {
          const double want = t < cnt ? q : 0.0;
          bad += std::fabs(avg.gx[at(n, c, t)] - want) > 0x1p-23 * std::fabs(want);
        }
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("temporal pools give the same bits on 1 and 2 threads", "[temporal_pool]") {
  const int64_t N = 16, C = 96, L = 300;
  const Tensor lengths = random_lengths(N, L, 150);
  const Tensor mask = lengths_mask(lengths, L);
  const Tensor gy = rich_tensor({N, C}, 151);
  for (int dim : {2, 1}) {
    const Tensor x = rich_tensor(dim == 2 ? Shape{N, C, L} : Shape{N, L, C}, 152);
    for (int i : {0, 3, 4}) {
      Module m;
      m.apply_numerics(emulated(i));
      for (bool max : {false, true}) {
        std::vector<PoolRun> runs;
        for (int threads : {1, 2}) {
          cpu_backend().set_threads(threads);
          runs.push_back(run_pool(max, m, x, dim, mask, gy));
        }
        cpu_backend().set_threads(0);
        INFO("dim " << dim << (max ? " max " : " avg ") << m.numerics().describe());
        CHECK(mismatch(runs[1].y, runs[0].y) == "");
        CHECK(mismatch(runs[1].gx, runs[0].gx) == "");
      }
    }
  }
}

TEST_CASE("temporal pools reject empty sequences and bad shapes", "[temporal_pool]") {
  Module m;
  const Tensor x = Tensor::zeros({2, 3, 4});
  CHECK_THROWS_WITH(temporal_avg_pool(m, x, 2, lengths_mask(Tensor::from_vector({2}, {4, 0}), 4)),
                    Catch::Contains("sequence 1 has no valid step"));
  CHECK_THROWS_WITH(temporal_max_pool(m, x, 1, Tensor::zeros({2, 4})), Catch::Contains("does not fit"));
  CHECK_THROWS_WITH(temporal_avg_pool(m, x, 0), Catch::Contains("dim must be"));
  CHECK_THROWS_WITH(lengths_mask(Tensor::from_vector({1}, {5}), 4), Catch::Contains("lengths[0] = 5"));
  CHECK_THROWS_AS(TemporalAvgPool(3), std::invalid_argument);
}
