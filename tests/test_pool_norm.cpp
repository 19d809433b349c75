// Pooling (layers/pool.h) and batch normalisation (layers/batchnorm.h):
//  - finite-difference gradients in plain fp32 for every pooling kind and for
//    BatchNorm1d/2d in training and evaluation mode;
//  - forward and backward under emulated formats equal, bit for bit, literal
//    loops of the arithmetic in docs/layers_nn.md (window sums in the acc format
//    divided exactly and rounded once, BN steps each rounded to out / grads),
//    with chunks, accumulator-only accumulators and stochastic rounding;
//  - PyTorch's semantics: max ties to the first index, count_include_pad,
//    adaptive windows, running statistics with momentum and the unbiased variance.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/autograd.h"
#include "layers/batchnorm.h"
#include "layers/layer_io.h"
#include "layers/pool.h"
#include "numerics/format_spec.h"
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

// Distinct values 0.05 apart in random order: no two within a finite-difference step of each other.
Tensor separated_tensor(const Shape& shape, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(static_cast<double>(i) * 0.05 - 0.025 * v.size());
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  return Tensor::from_vector(shape, v);
}

test::GradCheckResult check_module(const std::function<Tensor(const Tensor&)>& f, const Tensor& x_values) {
  Tensor x = x_values.clone();
  x.set_requires_grad(true);
  return test::grad_check([&](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
}

uint32_t draw(const Format& f, DrawKey key, uint32_t stage, uint64_t index) {
  return is_stochastic(f) ? philox_draw(key.seed, key.stream + stage, index) : 0;
}

// docs/contract.md section 4 for one output: positions arrive in the canonical order through term(a, b)
// (zero operands skipped); :sr draws at philox(key.seed, key.stream, base + site). result() is the
// accumulator after the last position (and chunk), without the output rounding.
struct LiteralMac {
  LiteralMac(const MacPolicy& p, int64_t K, DrawKey key, uint64_t output, int64_t site_terms = -1)
      : p(p), K(K), key(key), base(output * mac_site_count(site_terms < 0 ? K : site_terms, p.chunk)) {}
  MacPolicy p;
  int64_t K;
  DrawKey key;
  uint64_t base;
  double acc = 0.0, outer = 0.0;
  int64_t k = 0;

  uint32_t site(const Format& f, uint64_t s) const {
    return is_stochastic(f) ? philox_draw(key.seed, key.stream, base + s) : 0;
  }
  int64_t chunks() const { return p.chunk > 0 && K > 0 ? (K + p.chunk - 1) / p.chunk : 1; }
  void term(float a, float b) {
    if (p.chunk > 0 && k > 0 && k % p.chunk == 0) {
      outer = format_add(p.acc_outer, outer, acc, site(p.acc_outer, 2 * K + k / p.chunk - 1));
      acc = 0.0;
    }
    if (a != 0.0f && b != 0.0f) {
      double product = static_cast<double>(a) * static_cast<double>(b);
      if (!p.mul_exact) product = round_value(p.mul, product, site(p.mul, 2 * k));
      acc = format_add(p.acc, acc, product, site(p.acc, 2 * k + 1));
    }
    ++k;
  }
  double sum() {
    REQUIRE(k == K);
    if (p.chunk > 0) {
      outer = format_add(p.acc_outer, outer, acc, site(p.acc_outer, 2 * K + chunks() - 1));
      return outer;
    }
    return acc;
  }
  // R_out(sum) at the output site.
  float rounded(const Format& out) {
    return static_cast<float>(round_value(out, sum(), site(out, 2 * K + chunks() + 1)));
  }
};

MacPolicy sum_policy(const LayerNumerics& n) {
  MacPolicy p = n.mac;
  p.mul_exact = true;
  return p;
}

// ---------------------------------------------------------------------------
// Pooling references.

struct Window {
  int64_t start, len;
};

// Windows of a strided pooling along one axis (padding positions included).
std::vector<Window> strided_windows(int64_t in, int k, int s, int pad) {
  std::vector<Window> w;
  for (int64_t o = 0; o <= (in + 2 * pad - k) / s; ++o) w.push_back({o * s - pad, k});
  return w;
}

// PyTorch's adaptive windows: floor(o*in/out) .. ceil((o+1)*in/out).
std::vector<Window> adaptive_windows(int64_t in, int64_t out) {
  std::vector<Window> w;
  for (int64_t o = 0; o < out; ++o) {
    int64_t s = static_cast<int64_t>(std::floor(static_cast<double>(o * in) / out));
    int64_t e = static_cast<int64_t>(std::ceil(static_cast<double>((o + 1) * in) / out));
    w.push_back({s, e - s});
  }
  return w;
}

struct PoolRef {
  int64_t N, C, H, W;
  std::vector<Window> wh, ww;
  int64_t OH() const { return static_cast<int64_t>(wh.size()); }
  int64_t OW() const { return static_cast<int64_t>(ww.size()); }
  bool inside(int64_t ih, int64_t iw) const { return ih >= 0 && ih < H && iw >= 0 && iw < W; }
  int64_t max_cover(const std::vector<Window>& w, int64_t in) const {
    int64_t m = 0;
    for (int64_t i = 0; i < in; ++i) {
      int64_t c = 0;
      for (const Window& x : w) c += i >= x.start && i < x.start + x.len;
      m = std::max(m, c);
    }
    return m;
  }
};

// Average pooling: y = R_out(S / count), S the window sum in row-major window order.
std::vector<float> literal_avg_forward(const PoolRef& r, const LayerNumerics& n, const std::vector<float>& x,
                                       DrawKey key) {
  int64_t kmax = 0;
  for (const Window& a : r.wh)
    for (const Window& b : r.ww) kmax = std::max(kmax, a.len * b.len);
  std::vector<float> y;
  uint64_t o = 0;
  for (int64_t pl = 0; pl < r.N * r.C; ++pl)
    for (const Window& a : r.wh)
      for (const Window& b : r.ww) {
        LiteralMac mac(sum_policy(n), a.len * b.len, key, o, kmax);
        for (int64_t ih = a.start; ih < a.start + a.len; ++ih)
          for (int64_t iw = b.start; iw < b.start + b.len; ++iw)
            mac.term(r.inside(ih, iw) ? quantize(n.activations, x[(pl * r.H + ih) * r.W + iw]) : 0.0f, 1.0f);
        const double count = static_cast<double>(a.len * b.len);
        y.push_back(static_cast<float>(format_div(n.out(), mac.sum(), count, draw(n.out(), key, 1, o))));
        ++o;
      }
  return y;
}

// gx[i] = R_grads(sum over covering outputs o, ascending, of R_grads(g[o] / count[o])).
std::vector<float> literal_avg_backward(const PoolRef& r, const LayerNumerics& n,
                                        const std::vector<float>& gq, DrawKey key) {
  MacPolicy p = sum_policy(n);
  const int64_t kmax = r.max_cover(r.wh, r.H) * r.max_cover(r.ww, r.W);
  std::vector<float> gx;
  for (int64_t pl = 0; pl < r.N * r.C; ++pl)
    for (int64_t ih = 0; ih < r.H; ++ih)
      for (int64_t iw = 0; iw < r.W; ++iw) {
        int64_t K = 0;
        for (const Window& a : r.wh)
          for (const Window& b : r.ww)
            K += ih >= a.start && ih < a.start + a.len && iw >= b.start && iw < b.start + b.len;
        const uint64_t i = static_cast<uint64_t>((pl * r.H + ih) * r.W + iw);
        LiteralMac mac(p, K, DrawKey{key.seed, key.stream + 1}, i, kmax);
        for (int64_t oh = 0; oh < r.OH(); ++oh)
          for (int64_t ow = 0; ow < r.OW(); ++ow) {
            const Window& a = r.wh[oh];
            const Window& b = r.ww[ow];
            if (!(ih >= a.start && ih < a.start + a.len && iw >= b.start && iw < b.start + b.len)) continue;
            const uint64_t o = static_cast<uint64_t>((pl * r.OH() + oh) * r.OW() + ow);
            mac.term(static_cast<float>(format_div(n.grads, gq[o], static_cast<double>(a.len * b.len),
                                                   draw(n.grads, key, 0, o))),
                     1.0f);
          }
        gx.push_back(mac.rounded(n.grads));
      }
  return gx;
}

// Max pooling: the first maximum in row-major window order, rounded to out; its index.
void literal_max_forward(const PoolRef& r, const LayerNumerics& n, const std::vector<float>& x,
                         std::vector<float>* y, std::vector<int64_t>* at) {
  for (int64_t pl = 0; pl < r.N * r.C; ++pl)
    for (const Window& a : r.wh)
      for (const Window& b : r.ww) {
        float best = -INFINITY;
        int64_t where = -1;
        for (int64_t ih = a.start; ih < a.start + a.len; ++ih)
          for (int64_t iw = b.start; iw < b.start + b.len; ++iw)
            if (r.inside(ih, iw)) {
              const float v = quantize(n.activations, x[(pl * r.H + ih) * r.W + iw]);
              if (where < 0 || v > best) best = v, where = ih * r.W + iw;
            }
        y->push_back(quantize(n.out(), best));
        at->push_back(where);
      }
}

// gx[i] = R_grads(sum over covering outputs o, ascending, of (argmax[o] == i ? g[o] : 0)).
std::vector<float> literal_max_backward(const PoolRef& r, const LayerNumerics& n,
                                        const std::vector<float>& gq, const std::vector<int64_t>& at) {
  std::vector<float> gx;
  for (int64_t pl = 0; pl < r.N * r.C; ++pl)
    for (int64_t ih = 0; ih < r.H; ++ih)
      for (int64_t iw = 0; iw < r.W; ++iw) {
        int64_t K = 0;
        for (const Window& a : r.wh)
          for (const Window& b : r.ww)
            K += ih >= a.start && ih < a.start + a.len && iw >= b.start && iw < b.start + b.len;
        LiteralMac mac(sum_policy(n), K, {}, 0);
        for (int64_t oh = 0; oh < r.OH(); ++oh)
          for (int64_t ow = 0; ow < r.OW(); ++ow) {
            const Window& a = r.wh[oh];
            const Window& b = r.ww[ow];
            if (!(ih >= a.start && ih < a.start + a.len && iw >= b.start && iw < b.start + b.len)) continue;
            const int64_t o = (pl * r.OH() + oh) * r.OW() + ow;
            mac.term(at[o] == ih * r.W + iw ? gq[o] : 0.0f, 1.0f);
          }
        gx.push_back(mac.rounded(n.grads));
      }
  return gx;
}

struct PoolRun {
  std::vector<float> y, gx;
};

PoolRun run_pool(const std::function<Tensor(const Tensor&)>& f, const Tensor& x_values, const Tensor& gy) {
  Tensor x = x_values.clone();
  x.set_requires_grad(true);
  Tensor y = f(x);
  y.backward(gy);
  return {y.to_vector(), x.grad().to_vector()};
}

std::vector<NumericsPolicy> pool_policies() {
  return {policy({{"acc", "e5m10"}, {"out", "bf16"}, {"grads", "bf16"}}),
          policy({{"format", "e5m10"}, {"acc", "bf16"}, {"chunk", "2"}, {"acc_outer", "e5m10"}}),
          policy({{"acc", "fp64"}, {"out", "fp8_e4m3"}, {"grads", "e4m3"}, {"activations", "bf16"}}),
          policy({{"acc", "e5m10:sr"},
                  {"out", "bf16:sr"},
                  {"grads", "bf16:sr"},
                  {"chunk", "3"},
                  {"acc_outer", "fp16:sr"}}),
          policy({{"format", "fp32"}})};
}

// ---------------------------------------------------------------------------
// Batch norm references (docs/layers_nn.md).

struct BnRef {
  std::vector<float> y, xhat, invstd, mean, var, varu, running_mean, running_var;
};

// Training forward with batch statistics and the running update; x (N, C, S).
BnRef literal_bn_train(const LayerNumerics& n, int64_t N, int64_t C, int64_t S, const std::vector<float>& x,
                       const std::vector<float>& gamma, const std::vector<float>& beta, std::vector<float> rm,
                       std::vector<float> rv, DrawKey fwd) {
  const Format& out = n.out();
  const DrawKey stats{fwd.seed, fwd.stream + 16}, update{fwd.seed, fwd.stream + 32};
  const int64_t M = N * S;
  BnRef r;
  r.y.resize(x.size());
  r.xhat.resize(x.size());
  auto at = [&](int64_t nn, int64_t c, int64_t s) { return (nn * C + c) * S + s; };
  for (int64_t c = 0; c < C; ++c) {
    const uint64_t uc = static_cast<uint64_t>(c);
    LiteralMac sum1(sum_policy(n), M, DrawKey{stats.seed, stats.stream + 0}, uc);
    for (int64_t nn = 0; nn < N; ++nn)
      for (int64_t s = 0; s < S; ++s) sum1.term(quantize(n.activations, x[at(nn, c, s)]), 1.0f);
    const float mean =
        static_cast<float>(format_div(out, sum1.sum(), static_cast<double>(M), draw(out, stats, 1, uc)));
    LiteralMac sum2(n.mac, M, DrawKey{stats.seed, stats.stream + 3}, uc);
    for (int64_t nn = 0; nn < N; ++nn)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = at(nn, c, s);
        const float d =
            static_cast<float>(format_sub(out, quantize(n.activations, x[i]), mean, draw(out, stats, 2, i)));
        sum2.term(d, d);
      }
    const double s2 = sum2.sum();
    const float var =
        static_cast<float>(format_div(out, s2, static_cast<double>(M), draw(out, stats, 4, uc)));
    const float varu =
        static_cast<float>(format_div(out, s2, static_cast<double>(M - 1), draw(out, stats, 5, uc)));
    const float ve = static_cast<float>(format_add(out, var, 1e-5f, draw(out, fwd, 0, uc)));
    const float inv = static_cast<float>(round_value(out, fn_rsqrt(ve), draw(out, fwd, 1, uc)));
    const float g = quantize(n.weights, gamma[c]);
    const float b = quantize(n.weights, beta[c]);  // :sr reads are not used with this reference
    for (int64_t nn = 0; nn < N; ++nn)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = at(nn, c, s);
        const float d =
            static_cast<float>(format_sub(out, quantize(n.activations, x[i]), mean, draw(out, fwd, 2, i)));
        const float h = static_cast<float>(format_mul(out, d, inv, draw(out, fwd, 3, i)));
        const float t = static_cast<float>(format_mul(out, h, g, draw(out, fwd, 4, i)));
        r.xhat[i] = h;
        r.y[i] = static_cast<float>(format_add(out, t, b, draw(out, fwd, 5, i)));
      }
    const float keep = 1.0f - 0.1f;
    rm[c] = static_cast<float>(format_add(out, format_mul(out, 0.1f, mean, draw(out, update, 0, uc)),
                                          format_mul(out, keep, rm[c], draw(out, update, 1, uc)),
                                          draw(out, update, 2, uc)));
    rv[c] = static_cast<float>(format_add(out, format_mul(out, 0.1f, varu, draw(out, update, 3, uc)),
                                          format_mul(out, keep, rv[c], draw(out, update, 4, uc)),
                                          draw(out, update, 5, uc)));
    r.invstd.push_back(inv);
    r.mean.push_back(mean);
    r.var.push_back(var);
    r.varu.push_back(varu);
  }
  r.running_mean = rm;
  r.running_var = rv;
  return r;
}

struct BnGrads {
  std::vector<float> gx, ggamma, gbeta;
};

// Backward; with batch statistics gx = k (g - mean(g) - xhat mean(g xhat)), else gx = k g; k = gamma invstd.
BnGrads literal_bn_backward(const LayerNumerics& n, bool batch_stats, int64_t N, int64_t C, int64_t S,
                            const std::vector<float>& gy, const BnRef& f, const std::vector<float>& gamma,
                            DrawKey key) {
  const Format& G = n.grads;
  const int64_t M = N * S;
  BnGrads r;
  r.gx.resize(gy.size());
  auto at = [&](int64_t nn, int64_t c, int64_t s) { return (nn * C + c) * S + s; };
  for (int64_t c = 0; c < C; ++c) {
    const uint64_t uc = static_cast<uint64_t>(c);
    LiteralMac sg(sum_policy(n), M, DrawKey{key.seed, key.stream + 0}, uc);
    LiteralMac sgx(n.mac, M, DrawKey{key.seed, key.stream + 1}, uc);
    for (int64_t nn = 0; nn < N; ++nn)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = at(nn, c, s);
        sg.term(quantize(G, gy[i]), 1.0f);
        sgx.term(quantize(G, gy[i]), f.xhat[i]);
      }
    const double s1 = sg.sum(), s2 = sgx.sum();
    r.gbeta.push_back(static_cast<float>(round_value(G, s1, draw(G, key, 2, uc))));
    r.ggamma.push_back(static_cast<float>(round_value(G, s2, draw(G, key, 3, uc))));
    const float k =
        static_cast<float>(format_mul(G, quantize(n.weights, gamma[c]), f.invstd[c], draw(G, key, 6, uc)));
    const float mg = static_cast<float>(format_div(G, s1, static_cast<double>(M), draw(G, key, 4, uc)));
    const float mgx = static_cast<float>(format_div(G, s2, static_cast<double>(M), draw(G, key, 5, uc)));
    for (int64_t nn = 0; nn < N; ++nn)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = at(nn, c, s);
        const float g = quantize(G, gy[i]);
        if (!batch_stats) {
          r.gx[i] = static_cast<float>(format_mul(G, g, k, draw(G, key, 10, i)));
          continue;
        }
        const float t = static_cast<float>(format_sub(G, g, mg, draw(G, key, 7, i)));
        const float u = static_cast<float>(format_mul(G, f.xhat[i], mgx, draw(G, key, 8, i)));
        const float v = static_cast<float>(format_sub(G, t, u, draw(G, key, 9, i)));
        r.gx[i] = static_cast<float>(format_mul(G, v, k, draw(G, key, 10, i)));
      }
  }
  return r;
}

// Evaluation forward with running statistics read in the weights format.
BnRef literal_bn_eval(const LayerNumerics& n, int64_t N, int64_t C, int64_t S, const std::vector<float>& x,
                      const std::vector<float>& gamma, const std::vector<float>& beta,
                      const std::vector<float>& rm, const std::vector<float>& rv) {
  const Format& out = n.out();
  BnRef r;
  r.y.resize(x.size());
  r.xhat.resize(x.size());
  for (int64_t c = 0; c < C; ++c) {
    const float mean = quantize(n.weights, rm[c]);
    const float ve = static_cast<float>(format_add(out, quantize(n.weights, rv[c]), 1e-5f));
    const float inv = static_cast<float>(round_value(out, fn_rsqrt(ve)));
    for (int64_t nn = 0; nn < N; ++nn)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = (nn * C + c) * S + s;
        const float d = static_cast<float>(format_sub(out, quantize(n.activations, x[i]), mean));
        const float h = static_cast<float>(format_mul(out, d, inv));
        const float t = static_cast<float>(format_mul(out, h, quantize(n.weights, gamma[c])));
        r.xhat[i] = h;
        r.y[i] = static_cast<float>(format_add(out, t, quantize(n.weights, beta[c])));
      }
    r.invstd.push_back(inv);
  }
  return r;
}

std::vector<NumericsPolicy> bn_policies() {
  return {policy({{"mul", "e5m10"}, {"acc", "e5m10"}, {"out", "bf16"}, {"grads", "bf16"}}),
          policy({{"format", "fp32"}}),
          NumericsPolicy(),  // mul exact, acc fp32
          policy({{"format", "bf16"}, {"acc", "fp64"}, {"chunk", "7"}, {"acc_outer", "fp32"}}),
          policy({{"mul", "exact"},
                  {"acc", "fp16"},
                  {"chunk", "5"},
                  {"acc_outer", "e5m10"},
                  {"out", "e4m3"},
                  {"grads", "fp16"},
                  {"activations", "bf16"},
                  {"weights", "bf16"}}),
          policy({{"mul", "e5m10:sr"}, {"acc", "bf16:sr"}, {"out", "fp16:sr"}, {"grads", "bf16:sr"}}),
          policy({{"mul", "posit16_1"}, {"acc", "posit16_1"}, {"out", "posit16_1"}, {"grads", "posit16_1"}})};
}

}  // namespace

// ---------------------------------------------------------------------------

TEST_CASE("pooling gradients match finite differences in fp32") {
  const Tensor x = separated_tensor({2, 3, 7, 6}, 1);
  SECTION("max") {
    for (auto [k, s, p] : {std::tuple<Size2, Size2, Size2>{2, 2, 0}, {3, 2, 1}, {{3, 2}, {1, 2}, {1, 0}}}) {
      MaxPool2d m(k, s, p);
      auto r = check_module([&](const Tensor& t) { return m.forward(t); }, x);
      INFO(r.detail);
      CHECK(r.ok);
    }
  }
  SECTION("average") {
    for (auto [k, s, p] : {std::tuple<Size2, Size2, Size2>{2, 2, 0}, {3, 2, 1}, {{3, 2}, {2, 1}, {1, 1}}}) {
      AvgPool2d m(k, s, p);
      auto r = check_module([&](const Tensor& t) { return m.forward(t); }, x);
      INFO(r.detail);
      CHECK(r.ok);
    }
  }
  SECTION("adaptive average") {
    for (Size2 out : {Size2(3, 4), Size2(1), Size2(7, 6), Size2(4, 2), Size2(5, 5)}) {
      AdaptiveAvgPool2d m(out);
      auto r = check_module([&](const Tensor& t) { return m.forward(t); }, x);
      INFO(r.detail);
      CHECK(r.ok);
    }
  }
}

TEST_CASE("batch norm gradients match finite differences in fp32") {
  struct Shape_ {
    Shape x;
    bool two_d;
  };
  for (const Shape_& s : {Shape_{{6, 3}, false}, Shape_{{4, 3, 5}, false}, Shape_{{3, 3, 4, 5}, true}}) {
    INFO(shape_string(s.x));
    std::shared_ptr<BatchNorm> bn;
    if (s.two_d)
      bn = std::make_shared<BatchNorm2d>(3);
    else
      bn = std::make_shared<BatchNorm1d>(3);
    Tensor x = test::random_tensor(s.x, 21);
    Tensor gamma = test::random_tensor({3}, 22, 0.5f, 1.5f);
    Tensor beta = test::random_tensor({3}, 23);
    Tensor rm = test::random_tensor({3}, 24), rv = test::random_tensor({3}, 25, 0.5f, 2.0f);
    for (Tensor* t : {&x, &gamma, &beta}) t->set_requires_grad(true);
    for (bool train : {true, false}) {
      INFO((train ? "training" : "evaluation"));
      auto f = [&](const std::vector<Tensor>& in) {
        return batch_norm(*bn, in[0], in[1], in[2], train ? Tensor() : rm, train ? Tensor() : rv, train, 0.1f,
                          1e-5f);
      };
      auto r = test::grad_check(f, {x, gamma, beta});
      INFO(r.detail);
      CHECK(r.ok);
    }
    // The module itself, in training mode.
    bn->weight.copy_from(gamma);
    bn->bias.copy_from(beta);
    auto r = check_module([&](const Tensor& t) { return bn->forward(t); }, x);
    INFO(r.detail);
    CHECK(r.ok);
  }
}

TEST_CASE("average and adaptive pooling equal the literal loops") {
  const Tensor x = rich_tensor({2, 3, 7, 6}, 31);
  for (const NumericsPolicy& p : pool_policies()) {
    struct Kind {
      std::shared_ptr<Module> m;
      std::function<Tensor(const Tensor&)> f;
      PoolRef ref;
    };
    std::vector<Kind> kinds;
    for (auto [k, s, pad] : {std::tuple<Size2, Size2, Size2>{2, 2, 0}, {3, 2, 1}, {{3, 2}, {1, 2}, {1, 1}}}) {
      auto m = std::make_shared<AvgPool2d>(k, s, pad);
      kinds.push_back({m, [m](const Tensor& t) { return m->forward(t); },
                       PoolRef{2, 3, 7, 6, strided_windows(7, k.h, m->params.stride_h, pad.h),
                               strided_windows(6, k.w, m->params.stride_w, pad.w)}});
    }
    for (Size2 out : {Size2(3, 4), Size2(1), Size2(5, 4)}) {
      auto m = std::make_shared<AdaptiveAvgPool2d>(out);
      kinds.push_back({m, [m](const Tensor& t) { return m->forward(t); },
                       PoolRef{2, 3, 7, 6, adaptive_windows(7, out.h), adaptive_windows(6, out.w)}});
    }
    for (Kind& kd : kinds) {
      kd.m->apply_numerics(p);
      kd.m->context().seed = 5;
      const LayerNumerics& n = kd.m->numerics();
      INFO(n.describe() << " output " << kd.ref.OH() << "x" << kd.ref.OW());
      const Tensor gy = rich_tensor({2, 3, kd.ref.OH(), kd.ref.OW()}, 32);
      const PoolRun r = run_pool(kd.f, x, gy);
      CHECK(mismatch(r.y, literal_avg_forward(kd.ref, n, x.to_vector(),
                                              draw_key(*kd.m, DrawSite::Forward))) == "");
      std::vector<float> gq = gy.to_vector();
      if (!is_stochastic(n.grads))
        for (float& v : gq) v = quantize(n.grads, v);
      else
        continue;  // :sr reads of the gradient are not modelled by this reference
      CHECK(mismatch(r.gx, literal_avg_backward(kd.ref, n, gq, draw_key(*kd.m, DrawSite::GradInput))) == "");
    }
  }
}

TEST_CASE("average pooling counts padding positions in the divisor") {
  AvgPool2d m(3, 1, 1);
  Tensor x = Tensor::full({1, 1, 2, 2}, 1.0f);
  // Each 3x3 window covers the four ones and five padding positions: 4 / 9.
  for (float v : m.forward(x).to_vector()) CHECK(v == 4.0f / 9.0f);
}

TEST_CASE("max pooling equals the literal loops and sends gradients to the first maximum") {
  for (const NumericsPolicy& p : pool_policies()) {
    if (is_stochastic(p.resolve("").grads)) continue;  // :sr reads are not modelled here
    for (auto [k, s, pad] : {std::tuple<Size2, Size2, Size2>{2, 2, 0}, {3, 2, 1}, {{3, 2}, {1, 1}, {1, 0}}}) {
      MaxPool2d m(k, s, pad);
      m.apply_numerics(p);
      const LayerNumerics& n = m.numerics();
      INFO(n.describe() << " kernel " << k.h << "x" << k.w);
      // Coarse values: many ties inside windows.
      Tensor x = rich_tensor({2, 2, 7, 6}, 41);
      for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = std::round(x.data()[i] * 2.0f) / 2.0f;
      const PoolRef ref{2,
                        2,
                        7,
                        6,
                        strided_windows(7, k.h, m.params.stride_h, pad.h),
                        strided_windows(6, k.w, m.params.stride_w, pad.w)};
      const Tensor gy = rich_tensor({2, 2, ref.OH(), ref.OW()}, 42);
      const PoolRun r = run_pool([&](const Tensor& t) { return m.forward(t); }, x, gy);
      std::vector<float> y;
      std::vector<int64_t> at;
      literal_max_forward(ref, n, x.to_vector(), &y, &at);
      CHECK(mismatch(r.y, y) == "");
      std::vector<float> gq = gy.to_vector();
      for (float& v : gq) v = quantize(n.grads, v);
      CHECK(mismatch(r.gx, literal_max_backward(ref, n, gq, at)) == "");
    }
  }
}

TEST_CASE("max pooling ties go to the first index") {
  MaxPool2d m(2);
  Tensor x = Tensor::from_vector({1, 1, 2, 2}, {3.0f, 3.0f, 3.0f, 3.0f});
  x.set_requires_grad(true);
  Tensor y = m.forward(x);
  y.backward(Tensor::full({1, 1, 1, 1}, 1.0f));
  CHECK(x.grad().to_vector() == std::vector<float>{1.0f, 0.0f, 0.0f, 0.0f});
  Tensor z = Tensor::from_vector({1, 1, 2, 2}, {1.0f, NAN, 5.0f, NAN});
  CHECK(std::isnan(m.forward(z).item()));
}

// gx[i] = sum over the outputs o covering i, ascending, of (argmax[o] == i ? gy[o] : 0),
// whatever argmax holds: values naming no input (negative, fractional, past the plane,
// NaN) add nothing, an index outside o's window adds nothing from o, -0 names input 0.
TEST_CASE("max pooling backward follows the definition for any argmax values") {
  Pool2dParams pp;
  pp.kernel_h = pp.kernel_w = 3;
  pp.stride_h = pp.stride_w = 2;
  pp.pad_h = pp.pad_w = 1;
  const int64_t N = 2, C = 3, H = 5, W = 4, OH = 3, OW = 2;  // (5 + 2 - 3) / 2 + 1, (4 + 2 - 3) / 2 + 1
  const std::vector<float> odd = {-1.0f, 2.5f, 20.0f, 1e9f, NAN, -0.0f};
  std::mt19937 rng(7);
  std::vector<float> am(static_cast<size_t>(N * C * OH * OW)), g(am.size());
  for (size_t o = 0; o < am.size(); ++o) {
    am[o] = rng() % 2 ? static_cast<float>(rng() % (H * W)) : odd[rng() % odd.size()];
    g[o] = static_cast<float>(static_cast<int>(rng() % 64) - 32) / 8.0f;
  }
  const Tensor gy = Tensor::from_vector({N, C, OH, OW}, g), argmax = Tensor::from_vector({N, C, OH, OW}, am);
  for (int threads : {1, 2, 3}) {
    CpuBackend be;
    be.set_threads(threads);
    Tensor gx = Tensor::zeros({N, C, H, W});
    be.max_pool2d_backward(MacPolicy{}, pp, gy, argmax, gx, DrawKey{});
    std::vector<float> want(static_cast<size_t>(N * C * H * W));
    for (int64_t plane = 0; plane < N * C; ++plane)
      for (int64_t i = 0; i < H * W; ++i) {
        float acc = 0.0f;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t r0 = oh * 2 - 1, c0 = ow * 2 - 1, ih = i / W, iw = i % W;
            const bool covers = ih >= r0 && ih < r0 + 3 && iw >= c0 && iw < c0 + 3;
            const size_t o = static_cast<size_t>((plane * OH + oh) * OW + ow);
            if (covers && am[o] == static_cast<float>(i)) acc = acc + g[o];
          }
        want[static_cast<size_t>(plane * H * W + i)] = acc;
      }
    INFO("threads " << threads);
    CHECK(mismatch(gx.to_vector(), want) == "");
  }
  // A plane of 2^24 inputs is refused both ways: argmax could not name each of them as a distinct float.
  Pool2dParams whole;
  whole.kernel_h = whole.kernel_w = 4096;
  const Tensor big = Tensor::zeros({1, 1, 4096, 4096}), one = Tensor::zeros({1, 1, 1, 1});
  Tensor y1 = Tensor::zeros({1, 1, 1, 1}), am1 = Tensor::zeros({1, 1, 1, 1}),
         gbig = Tensor::zeros({1, 1, 4096, 4096});
  CHECK_THROWS_WITH(cpu_backend().max_pool2d_forward(Format{}, whole, big, y1, am1, DrawKey{}),
                    Catch::Contains("argmax indices must stay below 2^24"));
  CHECK_THROWS_WITH(cpu_backend().max_pool2d_backward(MacPolicy{}, whole, one, one, gbig, DrawKey{}),
                    Catch::Contains("argmax indices must stay below 2^24"));
  // An empty plane (H = 0 with padding: one output row of padding only) gives an empty gradient.
  Pool2dParams empty;
  empty.kernel_h = empty.kernel_w = 2;
  empty.pad_h = empty.pad_w = 1;
  Tensor gx0 = Tensor::zeros({1, 1, 0, 4});
  CHECK_NOTHROW(cpu_backend().max_pool2d_backward(MacPolicy{}, empty, Tensor::zeros({1, 1, 1, 5}),
                                                  Tensor::full({1, 1, 1, 5}, -1.0f), gx0, DrawKey{}));
}

TEST_CASE("batch norm training equals the literal steps") {
  const int64_t N = 3, C = 4, S = 10;
  const Tensor x = rich_tensor({N, C, S}, 51);
  const std::vector<float> gamma = rich_tensor({C}, 52, 0).to_vector(),
                           beta = rich_tensor({C}, 53, 0).to_vector();
  const std::vector<float> rm0 = rich_tensor({C}, 54, 0).to_vector();
  std::vector<float> rv0 = rich_tensor({C}, 55, 0).to_vector();
  for (float& v : rv0) v = std::fabs(v);
  const Tensor gy = rich_tensor({N, C, S}, 56);
  for (const NumericsPolicy& p : bn_policies()) {
    BatchNorm1d bn(C);
    bn.apply_numerics(p);
    bn.context().seed = 77;
    bn.context().step = 2;
    const LayerNumerics& n = bn.numerics();
    INFO(n.describe());
    bn.weight.copy_from(Tensor::from_vector({C}, gamma));
    bn.bias.copy_from(Tensor::from_vector({C}, beta));
    bn.running_mean.copy_from(Tensor::from_vector({C}, rm0));
    bn.running_var.copy_from(Tensor::from_vector({C}, rv0));
    Tensor xi = x.clone();
    xi.set_requires_grad(true);
    Tensor y = bn.forward(xi);
    const BnRef ref =
        literal_bn_train(n, N, C, S, x.to_vector(), gamma, beta, rm0, rv0, draw_key(bn, DrawSite::Forward));
    CHECK(mismatch(y.to_vector(), ref.y) == "");
    CHECK(mismatch(bn.running_mean.to_vector(), ref.running_mean) == "");
    CHECK(mismatch(bn.running_var.to_vector(), ref.running_var) == "");
    CHECK(bn.num_batches_tracked.item() == 1.0f);
    if (is_stochastic(n.grads)) continue;  // :sr reads of the gradient are not modelled by this reference
    y.backward(gy);
    const BnGrads g =
        literal_bn_backward(n, true, N, C, S, gy.to_vector(), ref, gamma, draw_key(bn, DrawSite::GradInput));
    CHECK(mismatch(xi.grad().to_vector(), g.gx) == "");
    CHECK(mismatch(bn.weight.grad().to_vector(), g.ggamma) == "");
    CHECK(mismatch(bn.bias.grad().to_vector(), g.gbeta) == "");
  }
}

TEST_CASE("batch norm with stochastic rounding draws the documented bits, including the backward") {
  const int64_t N = 4, C = 2, S = 6;
  const Tensor x = rich_tensor({N, C, S}, 61);
  const std::vector<float> gamma = {1.25f, -0.75f}, beta = {0.5f, -0.125f}, rm0 = {0, 0}, rv0 = {1, 1};
  const Tensor gy = rich_tensor({N, C, S}, 62);
  // Reads stay plain so that only the arithmetic draws.
  BatchNorm1d bn(C);
  bn.apply_numerics(policy({{"mul", "e5m10:sr"},
                            {"acc", "bf16:sr"},
                            {"chunk", "5"},
                            {"acc_outer", "e5m10:sr"},
                            {"out", "fp16:sr"}}));
  bn.context().seed = 9;
  bn.weight.copy_from(Tensor::from_vector({C}, gamma));
  bn.bias.copy_from(Tensor::from_vector({C}, beta));
  Tensor xi = x.clone();
  xi.set_requires_grad(true);
  Tensor y = bn.forward(xi);
  const LayerNumerics& n = bn.numerics();
  const BnRef ref =
      literal_bn_train(n, N, C, S, x.to_vector(), gamma, beta, rm0, rv0, draw_key(bn, DrawSite::Forward));
  CHECK(mismatch(y.to_vector(), ref.y) == "");
  CHECK(mismatch(bn.running_var.to_vector(), ref.running_var) == "");
  y.backward(gy);
  const BnGrads g =
      literal_bn_backward(n, true, N, C, S, gy.to_vector(), ref, gamma, draw_key(bn, DrawSite::GradInput));
  CHECK(mismatch(xi.grad().to_vector(), g.gx) == "");
  CHECK(mismatch(bn.weight.grad().to_vector(), g.ggamma) == "");
  // Another step draws other bits.
  bn.context().step = 1;
  CHECK(mismatch(bn.forward(x).to_vector(), ref.y) != "");
}

TEST_CASE("batch norm evaluation uses the running statistics and equals the literal steps") {
  const int64_t N = 2, C = 3, H = 2, W = 3;
  const Tensor x = rich_tensor({N, C, H, W}, 71);
  const std::vector<float> gamma = {0.5f, 1.5f, -1.0f}, beta = {0.25f, 0.0f, -0.5f};
  const std::vector<float> rm = {0.1f, -0.3f, 0.7f}, rv = {0.8f, 1.3f, 0.02f};
  const Tensor gy = rich_tensor({N, C, H, W}, 72);
  for (const NumericsPolicy& p : bn_policies()) {
    if (is_stochastic(p.resolve("").out()) || is_stochastic(p.resolve("").grads)) continue;
    BatchNorm2d bn(C);
    bn.apply_numerics(p);
    const LayerNumerics& n = bn.numerics();
    INFO(n.describe());
    bn.weight.copy_from(Tensor::from_vector({C}, gamma));
    bn.bias.copy_from(Tensor::from_vector({C}, beta));
    bn.running_mean.copy_from(Tensor::from_vector({C}, rm));
    bn.running_var.copy_from(Tensor::from_vector({C}, rv));
    bn.eval();
    Tensor xi = x.clone();
    xi.set_requires_grad(true);
    Tensor y = bn.forward(xi);
    const BnRef ref = literal_bn_eval(n, N, C, H * W, x.to_vector(), gamma, beta, rm, rv);
    CHECK(mismatch(y.to_vector(), ref.y) == "");
    CHECK(bn.running_mean.to_vector() == rm);  // untouched in evaluation
    CHECK(bn.num_batches_tracked.item() == 0.0f);
    y.backward(gy);
    const BnGrads g = literal_bn_backward(n, false, N, C, H * W, gy.to_vector(), ref, gamma, {});
    CHECK(mismatch(xi.grad().to_vector(), g.gx) == "");
    CHECK(mismatch(bn.weight.grad().to_vector(), g.ggamma) == "");
    CHECK(mismatch(bn.bias.grad().to_vector(), g.gbeta) == "");
  }
}

TEST_CASE("batch norm follows PyTorch's running statistics in fp32") {
  const int64_t N = 5, C = 2, H = 3, W = 2, M = N * H * W;
  BatchNorm2d bn(C);
  std::vector<double> rm(C, 0.0), rv(C, 1.0);
  for (int step = 0; step < 3; ++step) {
    const Tensor x = test::random_tensor({N, C, H, W}, 80 + step, -2.0f, 3.0f);
    const std::vector<float> xv = x.to_vector(), y = bn.forward(x).to_vector();
    for (int64_t c = 0; c < C; ++c) {
      double s = 0, ss = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < H * W; ++i) s += xv[(n * C + c) * H * W + i];
      const double mean = s / M;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < H * W; ++i) ss += std::pow(xv[(n * C + c) * H * W + i] - mean, 2);
      rm[c] = 0.9 * rm[c] + 0.1 * mean;
      rv[c] = 0.9 * rv[c] + 0.1 * ss / (M - 1);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < H * W; ++i) {
          const int64_t j = (n * C + c) * H * W + i;
          CHECK(y[j] == Approx((xv[j] - mean) / std::sqrt(ss / M + 1e-5)).margin(1e-5));
        }
      CHECK(bn.running_mean.to_vector()[c] == Approx(rm[c]).margin(1e-6));
      CHECK(bn.running_var.to_vector()[c] == Approx(rv[c]).margin(1e-6));
    }
  }
  CHECK(bn.num_batches_tracked.item() == 3.0f);
  CHECK(bn.state_dict().count("running_mean") == 1);
  CHECK(bn.state_dict().count("num_batches_tracked") == 1);
}

TEST_CASE("batch norm rejects inputs it cannot normalise") {
  BatchNorm1d bn1(3);
  BatchNorm2d bn2(3);
  CHECK_THROWS_WITH(bn1.forward(Tensor::zeros({4, 2})), Catch::Contains("is not (N, 3)"));
  CHECK_THROWS_WITH(bn2.forward(Tensor::zeros({4, 3, 2})), Catch::Contains("is not (N, 3, H, W)"));
  CHECK_THROWS_WITH(bn1.forward(Tensor::zeros({1, 3})), Catch::Contains("more than 1 value per channel"));
  bn1.eval();
  CHECK_NOTHROW(bn1.forward(Tensor::zeros({1, 3})));
}
