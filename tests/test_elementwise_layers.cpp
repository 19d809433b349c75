// Element-wise layers, softmax, dropout, shape ops and Sequential:
//  * finite-difference gradients in plain fp32 (tests/grad_check.h);
//  * forward values against float64 libm references, with stated tolerances;
//  * under a low-precision policy (everything e5m10), a literal loop of
//    numerics/round.h operations in the documented order equals the layer bit
//    for bit (GELU, tanh, sigmoid, softmax, log-softmax, residual add, dropout);
//  * the plain-fp32 fast paths equal the general path (fp32:sat) bit for bit;
//  * dropout masks: the documented Philox draws, the same for the same key,
//    different across steps; thread counts and :sr draws change no bit.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/autograd.h"
#include "core/draw_key.h"
#include "layers/activation.h"
#include "layers/dropout.h"
#include "layers/linear.h"
#include "layers/sequential.h"
#include "layers/shape_ops.h"
#include "layers/softmax.h"
#include "numerics/format_spec.h"
#include "numerics/functions.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/grad_check.h"

using namespace emu;
using emu::test::grad_check;
using emu::test::random_tensor;

namespace {

NumericsPolicy policy(const std::string& format) {
  NumericsPolicy p;
  p.set("format", format);
  return p;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b, std::string* where = nullptr) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (float_bits(a[i]) != float_bits(b[i])) {
      if (where)
        *where = "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
      return false;
    }
  }
  return true;
}

#define REQUIRE_SAME_BITS(a, b)          \
  do {                                   \
    std::string where_;                  \
    bool ok_ = same_bits(a, b, &where_); \
    INFO(where_);                        \
    REQUIRE(ok_);                        \
  } while (0)

std::vector<float> quantized(const Format& f, const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = quantize(f, v[i]);
  return out;
}

Tensor with_grad(Tensor t) {
  t.set_requires_grad(true);
  return t;
}

// Inputs away from ReLU's kink, so central differences see one slope.
Tensor away_from_zero(const Shape& s, uint64_t seed) {
  Tensor t = random_tensor(s, seed, -2, 2);
  for (int64_t i = 0; i < t.numel(); ++i)
    if (std::fabs(t.data()[i]) < 0.1f) t.data()[i] += t.data()[i] < 0 ? -0.2f : 0.2f;
  return t;
}

std::shared_ptr<ActivationLayer> make_activation(Activation kind) {
  switch (kind) {
    case Activation::Relu:
      return std::make_shared<ReLU>();
    case Activation::Gelu:
      return std::make_shared<GELU>();
    case Activation::Silu:
      return std::make_shared<SiLU>();
    case Activation::Tanh:
      return std::make_shared<Tanh>();
    case Activation::Sigmoid:
      return std::make_shared<Sigmoid>();
  }
  return nullptr;
}

double reference_activation(Activation kind, double x) {
  switch (kind) {
    case Activation::Relu:
      return x > 0 ? x : 0;
    case Activation::Gelu:
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));  // no cancellation for x << 0
    case Activation::Silu:
      return x / (1 + std::exp(-x));
    case Activation::Tanh:
      return std::tanh(x);
    case Activation::Sigmoid:
      return 1 / (1 + std::exp(-x));
  }
  return 0;
}

const Activation kAll[] = {Activation::Relu, Activation::Gelu, Activation::Silu, Activation::Tanh,
                           Activation::Sigmoid};

// Restores the CPU backend's thread count at scope exit.
struct ThreadCount {
  int saved = cpu_backend().threads();
  explicit ThreadCount(int n) { cpu_backend().set_threads(n); }
  ~ThreadCount() { cpu_backend().set_threads(saved); }
};

}  // namespace

// ---------------------------------------------------------------------------
// Activations

TEST_CASE("activations match float64 libm within 8 ulp of binary32 in plain fp32") {
  // numerics/functions.h is within a few ulps; 8 ulps (2^-20 relative) leaves
  // room for libm's own error and fails on any wrong formula or constant.
  std::vector<float> xs;
  for (int i = -1600; i <= 1600; ++i) xs.push_back(i * 0.005f);
  for (float v : {-30.0f, -15.5f, -9.0f, 9.0f, 15.5f, 30.0f, 1e-20f, -1e-20f}) xs.push_back(v);
  Tensor x = Tensor::from_vector({static_cast<int64_t>(xs.size())}, xs);
  for (Activation kind : kAll) {
    auto layer = make_activation(kind);
    std::vector<float> y = layer->forward(x).to_vector();
    for (size_t i = 0; i < xs.size(); ++i) {
      double ref = reference_activation(kind, xs[i]);
      double tol = 8 * std::ldexp(1.0, std::ilogb(std::max(std::fabs(ref), 0x1p-126)) - 23);
      INFO(activation_name(kind) << " x = " << xs[i] << " y = " << y[i] << " ref = " << ref);
      REQUIRE(std::fabs(y[i] - ref) <= tol);
    }
  }
}

TEST_CASE("activation special values") {
  const float inf = INFINITY;
  Tensor x = Tensor::from_vector({4}, {inf, -inf, NAN, -0.0f});
  ReLU relu;
  std::vector<float> r = relu.forward(x).to_vector();
  CHECK(r[0] == inf);
  CHECK(r[1] == 0.0f);
  CHECK(std::isnan(r[2]));
  CHECK(float_bits(r[3]) == 0u);  // relu(-0) = +0
  // Every NaN, whatever its payload and sign, gives the canonical 0x7fc00000
  // (docs/layers_elementwise.md): a GPU's max.NaN gives 0x7fffffff, x86 keeps
  // the payload, so the contract names one code.
  const std::vector<uint32_t> nans = {0x7fc12345u, 0xffc00001u, 0x7f800001u, 0xffffffffu, 0x7fc00000u};
  std::vector<float> nan_values;
  for (uint32_t b : nans) nan_values.push_back(bits_float(b));
  Tensor xn = Tensor::from_vector({static_cast<int64_t>(nans.size())}, nan_values);
  for (float v : relu.forward(xn).to_vector()) CHECK(float_bits(v) == 0x7fc00000u);
  GELU gelu;
  std::vector<float> g = gelu.forward(x).to_vector();
  CHECK(g[0] == inf);
  CHECK(g[1] == 0.0f);
  CHECK(std::isnan(g[2]));
  // Derivatives at the infinities: gelu' -> 1 / 0, silu' -> 1 / 0, no NaN.
  Tensor xi = with_grad(Tensor::from_vector({2}, {inf, -inf}));
  gelu.forward(xi).backward(Tensor::full({2}, 1.0f));
  CHECK(xi.grad().to_vector() == std::vector<float>{1.0f, 0.0f});
  xi.zero_grad();
  SiLU silu;
  silu.forward(xi).backward(Tensor::full({2}, 1.0f));
  CHECK(xi.grad().to_vector() == std::vector<float>{1.0f, 0.0f});
}

TEST_CASE("activation gradients pass finite differences in plain fp32") {
  for (Activation kind : kAll) {
    auto layer = make_activation(kind);
    auto r = grad_check([&](const std::vector<Tensor>& in) { return layer->forward(in[0]); },
                        {with_grad(away_from_zero({3, 7}, 11))});
    INFO(activation_name(kind) << ": " << r.detail);
    CHECK(r.ok);
  }
}

// Formats for the literal-loop tests: every IEEE rounding mode, fn, finite-only,
// :nosub and :sat formats (the FastRound route and its exact fallback), posits
// and fixed point (the exact route).
const char* const kLiteralFormats[] = {"e5m10",          "bf16:rtz",  "fp8_e4m3",  "e5m2:rup",
                                       "e4m3:rdn:nosub", "fp6_e2m3",  "e5m10:rna", "fp32:rup",
                                       "e4m3:sat",       "posit16_1", "fixed16_8"};

TEST_CASE("GELU tanh sigmoid SiLU equal a literal reference loop bit for bit in many formats") {
  for (const char* spec : kLiteralFormats) {
    const Format f = parse_format(spec);
    Tensor x = random_tensor({5, 40}, 3, -5, 5);
    Tensor gy = random_tensor({5, 40}, 4, -2, 2);
    const std::vector<float> xq = quantized(f, x.to_vector()), gq = quantized(f, gy.to_vector());
    for (Activation kind : {Activation::Gelu, Activation::Tanh, Activation::Sigmoid, Activation::Silu}) {
      auto layer = make_activation(kind);
      layer->apply_numerics(policy(spec));
      Tensor xg = with_grad(x.clone());
      Tensor y = layer->forward(xg);
      y.backward(gy);
      std::vector<float> want_y(xq.size()), want_g(xq.size());
      for (size_t i = 0; i < xq.size(); ++i) {
        const float v = xq[i];
        float d = 0;
        switch (kind) {
          case Activation::Gelu: {
            want_y[i] = quantize(f, fn_gelu(v));
            // gelu'(x) = Phi(x) + x phi(x) in binary32, in the documented order, then R.
            float cdf = 0.5f * (1.0f + fn_erf(v * 0x1.6a09e6p-1f));
            float density = fn_exp(-0.5f * (v * v)) * 0x1.988454p-2f;
            d = quantize(f, cdf + v * density);
            break;
          }
          case Activation::Silu: {
            want_y[i] = quantize(f, fn_silu(v));
            float sg = fn_sigmoid(v);
            d = quantize(f, sg * (1.0f + v * (1.0f - sg)));
            break;
          }
          case Activation::Tanh: {
            want_y[i] = quantize(f, fn_tanh(v));
            float yy = static_cast<float>(format_mul(f, want_y[i], want_y[i]));
            d = static_cast<float>(format_sub(f, 1.0, yy));
            break;
          }
          case Activation::Sigmoid: {
            want_y[i] = quantize(f, fn_sigmoid(v));
            float om = static_cast<float>(format_sub(f, 1.0, want_y[i]));
            d = static_cast<float>(format_mul(f, want_y[i], om));
            break;
          }
          default:
            break;
        }
        want_g[i] = static_cast<float>(format_mul(f, gq[i], d));
      }
      INFO(spec << " " << activation_name(kind));
      REQUIRE_SAME_BITS(y.to_vector(), want_y);
      REQUIRE_SAME_BITS(xg.grad().to_vector(), want_g);
    }
  }
}

TEST_CASE("ReLU under e5m2 rounds the output and passes the read gradient") {
  const Format f = parse_format("e5m2");
  ReLU relu;
  relu.apply_numerics(policy("e5m2"));
  Tensor x = with_grad(Tensor::from_vector({4}, {0.3f, -0.3f, 1.1f, 0.0f}));
  Tensor y = relu.forward(x);
  CHECK(y.to_vector() == std::vector<float>{quantize(f, 0.3f), 0.0f, quantize(f, 1.1f), 0.0f});
  y.backward(Tensor::from_vector({4}, {0.7f, 0.7f, -0.9f, 0.7f}));
  CHECK(x.grad().to_vector() == std::vector<float>{quantize(f, 0.7f), 0.0f, quantize(f, -0.9f), 0.0f});
}

TEST_CASE("fast rounding helpers equal numerics/round.h bit for bit") {
  // rounded_add / rounded_mul / rounded_div and MacRounding take the FastRound
  // route (exact binary64 results, or a bracket of the binary64 result) where
  // the format allows it. Operands spread over 2^-60 .. 2^60 so that sums are
  // often inexact in binary64, in every rounding mode; plus special values.
  const char* specs[] = {"e5m10",    "e5m10:rtz", "e5m10:rup",      "e5m10:rdn", "e5m10:rna", "fp8_e4m3",
                         "e5m2:sat", "fp6_e2m3",  "e4m3:rdn:nosub", "fp32:rup",  "bf16:rdn",  "e8m30:rup",
                         "e10m51",   "fp64"};
  std::mt19937_64 rng(2024);
  auto random_double = [&](bool float_valued) {
    std::uniform_int_distribution<int> e(-60, 60);
    std::uniform_real_distribution<double> m(1.0, 2.0);
    double v = std::ldexp(m(rng), e(rng)) * (rng() & 1 ? -1 : 1);
    return float_valued ? static_cast<double>(static_cast<float>(v)) : v;
  };
  const double specials[] = {0.0,      -0.0,           INFINITY, -INFINITY, NAN,     1.0, -1.0,
                             0x1p-149, 0x1.fffffep127, 65504.0,  448.0,     0x1p-24, 3.0};
  for (const char* spec : specs) {
    INFO(spec);
    const Format f = parse_format(spec);
    const FastRound fr(f);
    REQUIRE(fr.on);
    auto check = [&](double a, double b, bool float_ops) {
      INFO("a = " << a << " b = " << b);
      REQUIRE(double_bits(rounded_add(f, fr, a, b, 0)) == double_bits(format_add(f, a, b)));
      REQUIRE(double_bits(rounded_div(f, fr, a, b, 0)) == double_bits(format_div(f, a, b)));
      if (float_ops) {
        const float fa = static_cast<float>(a), fb = static_cast<float>(b);
        REQUIRE(double_bits(rounded_mul(f, fr, fa, fb, 0)) == double_bits(format_mul(f, fa, fb)));
      }
    };
    for (int i = 0; i < 20000; ++i) {
      const bool float_valued = i % 2 == 0;
      double a = random_double(float_valued), b = random_double(float_valued);
      if (i % 7 == 0) b = -a * (1 + std::ldexp(1.0, -30));               // cancellation
      if (i % 11 == 0) b = std::ldexp(1.0, -55) * (rng() & 1 ? 1 : -1);  // far below a's last bit
      check(a, b, float_valued);
    }
    for (double a : specials)
      for (double b : specials) check(a, b, true);
    // The reduction: MacRounding against mac_reduce, with mul exact and rounded.
    for (bool mul_exact : {true, false}) {
      MacPolicy p;
      p.mul_exact = mul_exact;
      p.mul = f;
      p.acc = f;
      p.out = f;
      const MacRounding mr(p);
      for (int trial = 0; trial < 200; ++trial) {
        std::vector<float> a(37), b(37);
        for (size_t k = 0; k < a.size(); ++k) {
          a[k] = static_cast<float>(random_double(true));
          b[k] = trial % 3 == 0 ? 1.0f : static_cast<float>(random_double(true));
          if (k % 9 == 4) a[k] = 0.0f;
        }
        auto no_draw = [](uint64_t) { return 0u; };
        REQUIRE(double_bits(mr.reduce(a.data(), b.data(), 37, no_draw)) ==
                double_bits(mac_reduce(p, a.data(), b.data(), 37, nullptr, no_draw)));
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Softmax

TEST_CASE("softmax and log-softmax match float64 in plain fp32") {
  Tensor x = random_tensor({6, 9}, 21, -6, 6);
  Softmax sm;
  LogSoftmax lsm;
  std::vector<float> y = sm.forward(x).to_vector(), ly = lsm.forward(x).to_vector();
  std::vector<float> xv = x.to_vector();
  for (int r = 0; r < 6; ++r) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 9; ++j) m = std::max(m, double(xv[r * 9 + j]));
    for (int j = 0; j < 9; ++j) s += std::exp(xv[r * 9 + j] - m);
    double total = 0;
    for (int j = 0; j < 9; ++j) {
      double p = std::exp(xv[r * 9 + j] - m) / s, lp = xv[r * 9 + j] - m - std::log(s);
      total += y[r * 9 + j];
      // A few binary32 roundings of well-scaled values: 1e-6 relative, 1e-6 absolute.
      CHECK(std::fabs(y[r * 9 + j] - p) <= 1e-6 * p + 1e-9);
      CHECK(std::fabs(ly[r * 9 + j] - lp) <= 1e-6 * std::fabs(lp) + 1e-6);
    }
    CHECK(std::fabs(total - 1) < 4e-6);
  }
}

TEST_CASE("softmax works over the last dim of any rank and handles extreme rows") {
  Softmax sm;
  Tensor x = random_tensor({2, 3, 4}, 5);
  Tensor y = sm.forward(x);
  REQUIRE(y.shape() == Shape{2, 3, 4});
  std::vector<float> y2 = sm.forward(x.view({6, 4})).to_vector();
  CHECK(y.to_vector() == y2);
  const float inf = INFINITY;
  std::vector<float> e =
      sm.forward(Tensor::from_vector({3, 3}, {1000, 0, -1000, -inf, 0, -inf, NAN, 0, 1})).to_vector();
  CHECK(e[0] == 1.0f);
  CHECK(e[1] == 0.0f);
  CHECK(e[2] == 0.0f);
  CHECK(e[3] == 0.0f);
  CHECK(e[4] == 1.0f);
  CHECK(e[5] == 0.0f);
  CHECK((std::isnan(e[6]) && std::isnan(e[7]) && std::isnan(e[8])));
}

TEST_CASE("softmax and log-softmax gradients pass finite differences in plain fp32") {
  Softmax sm;
  LogSoftmax lsm;
  auto r1 = grad_check([&](const std::vector<Tensor>& in) { return sm.forward(in[0]); },
                       {with_grad(random_tensor({4, 6}, 31, -2, 2))});
  INFO(r1.detail);
  CHECK(r1.ok);
  auto r2 = grad_check([&](const std::vector<Tensor>& in) { return lsm.forward(in[0]); },
                       {with_grad(random_tensor({2, 3, 5}, 32, -2, 2))});
  INFO(r2.detail);
  CHECK(r2.ok);
}

namespace {

// The documented softmax steps with numerics/round.h, row by row. f: out and
// element format, acc: the sum's accumulator, mul: product format of the dot.
void reference_softmax(const Format& f, const Format& acc, const Format& mul, bool log,
                       const std::vector<float>& x, const std::vector<float>& gy, int rows, int C,
                       std::vector<float>* y, std::vector<float>* gx) {
  y->assign(x.size(), 0);
  gx->assign(x.size(), 0);
  for (int r = 0; r < rows; ++r) {
    const float* xr = &x[r * C];
    float m = -INFINITY;
    for (int j = 0; j < C; ++j) m = std::max(m, xr[j]);
    std::vector<float> d(C), e(C);
    double s = 0;
    for (int j = 0; j < C; ++j) {
      d[j] = static_cast<float>(format_sub(f, xr[j], m));
      e[j] = quantize(f, fn_exp(d[j]));
      if (e[j] != 0) s = format_add(acc, s, e[j]);
    }
    float* yr = &(*y)[r * C];
    if (log) {
      float l = quantize(f, fn_log(static_cast<float>(s)));
      for (int j = 0; j < C; ++j) yr[j] = static_cast<float>(format_sub(f, d[j], l));
    } else {
      for (int j = 0; j < C; ++j) yr[j] = static_cast<float>(format_div(f, e[j], s));
    }
    // Backward, g = f.
    const float* gr = &gy[r * C];
    float* out = &(*gx)[r * C];
    if (log) {
      double S = 0;
      for (int j = 0; j < C; ++j)
        if (gr[j] != 0) S = format_add(acc, S, gr[j]);
      float Sg = static_cast<float>(round_value(f, S));
      for (int j = 0; j < C; ++j) {
        float p = quantize(f, fn_exp(yr[j]));
        out[j] = static_cast<float>(format_sub(f, gr[j], format_mul(f, p, Sg)));
      }
    } else {
      double dot = 0;
      for (int j = 0; j < C; ++j)
        if (gr[j] != 0 && yr[j] != 0) dot = format_add(acc, dot, format_mul(mul, gr[j], yr[j]));
      float dg = static_cast<float>(round_value(f, dot));
      for (int j = 0; j < C; ++j)
        out[j] = static_cast<float>(format_mul(f, yr[j], static_cast<float>(format_sub(f, gr[j], dg))));
    }
  }
}

}  // namespace

TEST_CASE("softmax and log-softmax equal a literal reference loop bit for bit in many formats") {
  const int rows = 7, C = 13;
  Tensor x = random_tensor({rows, C}, 41, -4, 4);
  Tensor gy = random_tensor({rows, C}, 42, -1, 1);
  for (const char* spec : kLiteralFormats) {
    const Format f = parse_format(spec);
    for (bool log : {false, true}) {
      std::shared_ptr<UnaryModule> layer;
      if (log)
        layer = std::make_shared<LogSoftmax>();
      else
        layer = std::make_shared<Softmax>();
      layer->apply_numerics(policy(spec));
      Tensor xg = with_grad(x.clone());
      Tensor y = layer->forward(xg);
      y.backward(gy);
      std::vector<float> want_y, want_g;
      reference_softmax(f, f, f, log, quantized(f, x.to_vector()), quantized(f, gy.to_vector()), rows, C,
                        &want_y, &want_g);
      INFO(spec << (log ? " log-softmax" : " softmax"));
      REQUIRE_SAME_BITS(y.to_vector(), want_y);
      REQUIRE_SAME_BITS(xg.grad().to_vector(), want_g);
    }
  }
}

TEST_CASE("softmax under e5m10:sr draws at the documented sites") {
  // Sites (stream = the Forward key's stream + site): 0 d_j, 1 e_j, 2 the sum
  // (row r's term j accumulates at index r*(2C+3) + 2j+1), 4 the quotient.
  const Format f = parse_format("e5m10:sr");
  const int64_t rows = 3, C = 9;
  Softmax sm;
  sm.apply_numerics(policy("e5m10:sr"));
  sm.initialize(77);
  Tensor x = random_tensor({rows, C}, 45, -3, 3);
  std::vector<float> y = sm.forward(x).to_vector(), xv = x.to_vector(), want(xv.size());
  const DrawKey read = layer_draw_key(77, "", DrawSite::ReadInput, 0);
  const DrawKey key = layer_draw_key(77, "", DrawSite::Forward, 0);
  auto draw = [&](uint32_t site, uint64_t i) { return philox_draw(key.seed, key.stream + site, i); };
  const uint64_t sites = 2 * C + 3;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> xq(C), d(C), e(C);
    float m = -INFINITY;
    for (int64_t j = 0; j < C; ++j) {
      xq[j] = quantize(f, xv[r * C + j], philox_draw(read.seed, read.stream, r * C + j));
      m = std::max(m, xq[j]);
    }
    double s = 0;
    for (int64_t j = 0; j < C; ++j) {
      d[j] = float(format_sub(f, xq[j], m, draw(0, r * C + j)));
      e[j] = quantize(f, fn_exp(d[j]), draw(1, r * C + j));
      if (e[j] != 0) s = format_add(f, s, e[j], draw(2, r * sites + 2 * j + 1));
    }
    for (int64_t j = 0; j < C; ++j) want[r * C + j] = float(format_div(f, e[j], s, draw(4, r * C + j)));
  }
  REQUIRE_SAME_BITS(y, want);
}

TEST_CASE("softmax with a wide accumulator: out e5m10, acc fp64, mul exact") {
  NumericsPolicy p = policy("e5m10");
  p.set("acc", "fp64");
  p.set("mul", "exact");
  const Format f = parse_format("e5m10"), acc = parse_format("fp64");
  Tensor x = random_tensor({3, 50}, 43, -3, 3);
  Tensor gy = random_tensor({3, 50}, 44, -1, 1);
  Softmax sm;
  sm.apply_numerics(p);
  Tensor xg = with_grad(x.clone());
  Tensor y = sm.forward(xg);
  y.backward(gy);
  std::vector<float> want_y, want_g;
  // mul exact: the product gy*y is exact in binary64, which round_value keeps.
  reference_softmax(f, acc, acc, false, quantized(f, x.to_vector()), quantized(f, gy.to_vector()), 3, 50,
                    &want_y, &want_g);
  REQUIRE_SAME_BITS(y.to_vector(), want_y);
  REQUIRE_SAME_BITS(xg.grad().to_vector(), want_g);
}

// ---------------------------------------------------------------------------
// Fast paths, layer-level emulation, threads and stochastic rounding

TEST_CASE("plain fp32 fast paths equal the general path bit for bit") {
  // fp32:sat is not plain fp32, so every op takes the general path (exact
  // operations rounded by numerics/round.h); on finite data far from overflow
  // it must give exactly the native binary32 bits.
  Tensor x = random_tensor({9, 33}, 51, -4, 4);
  Tensor gy = random_tensor({9, 33}, 52, -1, 1);
  auto run = [&](const std::string& format, auto make) {
    auto layer = make();
    layer->apply_numerics(policy(format));
    Tensor xg = with_grad(x.clone());
    Tensor y = layer->forward(xg);
    y.backward(gy);
    std::vector<float> out = y.to_vector(), g = xg.grad().to_vector();
    out.insert(out.end(), g.begin(), g.end());
    return out;
  };
  for (Activation kind : kAll) {
    INFO(activation_name(kind));
    auto make = [kind] { return make_activation(kind); };
    REQUIRE_SAME_BITS(run("fp32", make), run("fp32:sat", make));
  }
  auto make_sm = [] { return std::make_shared<Softmax>(); };
  auto make_lsm = [] { return std::make_shared<LogSoftmax>(); };
  auto make_drop = [] { return std::make_shared<Dropout>(0.3f); };
  REQUIRE_SAME_BITS(run("fp32", make_sm), run("fp32:sat", make_sm));
  REQUIRE_SAME_BITS(run("fp32", make_lsm), run("fp32:sat", make_lsm));
  REQUIRE_SAME_BITS(run("fp32", make_drop), run("fp32:sat", make_drop));
}

TEST_CASE("layer-level emulation computes in fp32 and rounds only the output") {
  const Format f = parse_format("e5m10");
  NumericsPolicy p = policy("e5m10");
  p.set("emulation", "layer");
  Tensor x = random_tensor({4, 11}, 61, -3, 3);
  GELU plain, emulated;
  emulated.apply_numerics(p);
  CHECK(emulated.forward(x).to_vector() == quantized(f, plain.forward(x).to_vector()));
  Softmax sp, se;
  se.apply_numerics(p);
  CHECK(se.forward(x).to_vector() == quantized(f, sp.forward(x).to_vector()));
}

TEST_CASE("thread counts change no bit, with or without stochastic rounding") {
  Tensor x = random_tensor({300, 257}, 71, -4, 4);  // several chunks of 2^14 elements
  Tensor gy = random_tensor({300, 257}, 72, -1, 1);
  for (const char* format : {"fp32", "e5m10", "e4m3:sr"}) {
    auto run = [&](int threads, auto make) {
      ThreadCount tc(threads);
      auto layer = make();
      layer->apply_numerics(policy(format));
      Tensor xg = with_grad(x.clone());
      Tensor y = layer->forward(xg);
      y.backward(gy);
      std::vector<float> out = y.to_vector(), g = xg.grad().to_vector();
      out.insert(out.end(), g.begin(), g.end());
      return out;
    };
    auto make_gelu = [] { return std::make_shared<GELU>(); };
    auto make_sm = [] { return std::make_shared<LogSoftmax>(); };
    auto make_drop = [] { return std::make_shared<Dropout>(0.5f); };
    INFO(format);
    REQUIRE_SAME_BITS(run(1, make_gelu), run(3, make_gelu));
    REQUIRE_SAME_BITS(run(1, make_sm), run(3, make_sm));
    REQUIRE_SAME_BITS(run(1, make_drop), run(3, make_drop));
  }
}

TEST_CASE("stochastic rounding draws follow the layer's key") {
  // Under :sr the rounding of element i draws philox_draw(seed, stream, i) of
  // the Forward site; a different seed gives other bits.
  Tensor x = random_tensor({1000}, 81, -3, 3);
  const Format f = parse_format("e4m3:sr");
  Tanh t1;
  t1.apply_numerics(policy("e4m3:sr"));
  t1.initialize(5);
  std::vector<float> y1 = t1.forward(x).to_vector();
  const DrawKey read = layer_draw_key(5, "", DrawSite::ReadInput, 0);
  const DrawKey fwd = layer_draw_key(5, "", DrawSite::Forward, 0);
  std::vector<float> xv = x.to_vector(), want(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    float xq = quantize(f, xv[i], philox_draw(read.seed, read.stream, i));
    want[i] = quantize(f, fn_tanh(xq), philox_draw(fwd.seed, fwd.stream, i));
  }
  REQUIRE_SAME_BITS(y1, want);
  Tanh t2;
  t2.apply_numerics(policy("e4m3:sr"));
  t2.initialize(6);
  CHECK(t2.forward(x).to_vector() != y1);
}

// ---------------------------------------------------------------------------
// Dropout

TEST_CASE("dropout masks are the documented Philox draws") {
  const float p = 0.25f;
  Dropout drop(p);
  drop.initialize(1234);
  drop.context().step = 7;
  const int64_t n = 100000;
  Tensor x = random_tensor({n}, 91, 0.5f, 1.5f);  // no zeros: a zero output means dropped
  std::vector<float> y = drop.forward(x).to_vector(), xv = x.to_vector();
  const DrawKey key = layer_draw_key(1234, "", DrawSite::Dropout, 7);
  const uint64_t threshold = static_cast<uint64_t>(0.25 * 4294967296.0);
  const float scale = 1.0f / 0.75f;  // 4/3 rounded to binary32, as R_fp32(1 / (1 - p))
  CHECK(dropout_scale(Format{}, p) == scale);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = philox_draw(key.seed, key.stream, static_cast<uint64_t>(i)) >= threshold;
    kept += keep;
    INFO("element " << i);
    REQUIRE(y[i] == (keep ? xv[i] * scale : 0.0f));
  }
  // Binomial(1e5, 0.75): sd 137; 1% is > 7 sd.
  CHECK(std::fabs(kept / double(n) - 0.75) < 0.01);
}

TEST_CASE("dropout: same key same mask, a new step a new mask, backward reuses the mask") {
  Dropout drop(0.5f);
  drop.initialize(99);
  Tensor x = Tensor::full({4096}, 1.0f);
  std::vector<float> a = drop.forward(x).to_vector();
  std::vector<float> b = drop.forward(x).to_vector();
  CHECK(a == b);
  drop.context().step += 1;
  std::vector<float> c = drop.forward(x).to_vector();
  CHECK(a != c);
  // Another layer (another path) draws another mask at the same step.
  Sequential seq(std::make_shared<Dropout>(0.5f), std::make_shared<Dropout>(0.5f));
  seq.initialize(99);
  CHECK(seq.at(0)->path() == "0");
  CHECK(std::static_pointer_cast<Dropout>(seq.at(0))->forward(x).to_vector() !=
        std::static_pointer_cast<Dropout>(seq.at(1))->forward(x).to_vector());
  // Backward: the gradient is the mask times the scale, even if the step moved on.
  Tensor xg = with_grad(Tensor::full({4096}, 1.0f));
  Tensor y = drop.forward(xg);
  std::vector<float> yv = y.to_vector();
  drop.context().step += 1;
  y.backward(Tensor::full({4096}, 1.0f));
  CHECK(xg.grad().to_vector() == yv);
}

TEST_CASE("dropout in evaluation is the identity, and p = 0 and p = 1 in training") {
  Tensor x = random_tensor({64}, 101);
  Dropout drop(0.5f);
  drop.eval();
  CHECK(drop.forward(x).same(x));
  Dropout none(0.0f);
  CHECK(none.forward(x).to_vector() == x.to_vector());
  Dropout all(1.0f);
  CHECK(all.forward(x).to_vector() == std::vector<float>(64, 0.0f));
  CHECK_THROWS_AS(Dropout(1.5f), std::invalid_argument);
}

TEST_CASE("dropout gradient passes finite differences, and e5m10 dropout is R(x * R(1/(1-p)))") {
  Dropout drop(0.3f);
  drop.initialize(3);
  auto r = grad_check([&](const std::vector<Tensor>& in) { return drop.forward(in[0]); },
                      {with_grad(random_tensor({5, 8}, 111))});
  INFO(r.detail);
  CHECK(r.ok);

  const Format f = parse_format("e5m10");
  Dropout low(0.3f);
  low.apply_numerics(policy("e5m10"));
  low.initialize(3);
  Tensor x = random_tensor({2000}, 112, -3, 3);
  std::vector<float> y = low.forward(x).to_vector(), xq = quantized(f, x.to_vector());
  const float scale = static_cast<float>(format_div(f, 1.0, 1.0 - double(0.3f)));
  CHECK(scale == 1.4287109375f);  // 1/0.7 = 1.428571...; e5m10 grid 2^-10 above 1
  const DrawKey key = layer_draw_key(3, "", DrawSite::Dropout, 0);
  const uint64_t threshold = dropout_threshold(0.3f);
  std::vector<float> want(xq.size());
  for (size_t i = 0; i < xq.size(); ++i)
    want[i] = philox_draw(key.seed, key.stream, i) >= threshold
                  ? static_cast<float>(format_mul(f, xq[i], scale))
                  : 0.0f;
  REQUIRE_SAME_BITS(y, want);
}

// ---------------------------------------------------------------------------
// Shape ops and the residual add

TEST_CASE("flatten and reshape: shapes, views and gradients") {
  Tensor x = random_tensor({2, 3, 4, 5}, 121);
  CHECK(flatten(x).shape() == Shape{2, 60});
  CHECK(flatten(x, 0).shape() == Shape{120});
  CHECK(flatten(x, 1, 2).shape() == Shape{2, 12, 5});
  CHECK(flatten(x, -2).shape() == Shape{2, 3, 20});
  CHECK(flatten(Tensor::scalar(3)).shape() == Shape{1});
  CHECK(reshape(x, {-1, 10}).shape() == Shape{12, 10});
  CHECK(reshape(x, {6, 20}).to_vector() == x.to_vector());
  CHECK_THROWS(reshape(x, {7, -1}));
  // A transposed (non-contiguous) input is copied in row-major order of the view.
  Tensor t = x.view({6, 20}).transpose(0, 1);
  CHECK(reshape(t, {120}).to_vector() == t.to_vector());
  Flatten fl;
  auto r = grad_check([&](const std::vector<Tensor>& in) { return fl.forward(in[0]); },
                      {with_grad(random_tensor({3, 2, 2}, 122))});
  INFO(r.detail);
  CHECK(r.ok);
  // The copy path's gradient: a non-contiguous leaf gets the incoming gradient in
  // its own (view) order.
  Tensor leaf = with_grad(random_tensor({3, 4}, 123).transpose(0, 1));
  Tensor r_grad = random_tensor({2, 6}, 124);
  reshape(leaf, {2, 6}).backward(r_grad);
  CHECK(leaf.grad().shape() == Shape{4, 3});
  CHECK(leaf.grad().to_vector() == r_grad.to_vector());
}

TEST_CASE("concat: values along any dim and gradients to each input") {
  Tensor a = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::from_vector({2, 1}, {5, 6});
  CHECK(concat({a, b}, 1).to_vector() == std::vector<float>{1, 2, 5, 3, 4, 6});
  CHECK(concat({a, a}, 0).to_vector() == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4});
  CHECK(concat({a, b}, -1).shape() == Shape{2, 3});
  CHECK_THROWS_AS(concat({a, b}, 0), std::invalid_argument);
  auto r = grad_check(
      [&](const std::vector<Tensor>& in) {
        return concat({in[0], in[1], in[0]}, 1);
      },
      {with_grad(random_tensor({2, 3, 2}, 131)), with_grad(random_tensor({2, 1, 2}, 132))});
  INFO(r.detail);
  CHECK(r.ok);
  // An input that needs no gradient gets none.
  Tensor c = with_grad(random_tensor({2, 2}, 133));
  concat({c, b}, 1).backward(Tensor::full({2, 3}, 1.0f));
  CHECK(c.grad().to_vector() == std::vector<float>(4, 1.0f));
  CHECK_FALSE(b.grad().defined());
}

TEST_CASE("residual add: R_out(a + b) forward, R_grads(gy) to both inputs") {
  Add add_layer;
  auto r = grad_check([&](const std::vector<Tensor>& in) { return add_layer.forward(in[0], in[1]); },
                      {with_grad(random_tensor({3, 4}, 141)), with_grad(random_tensor({3, 4}, 142))});
  INFO(r.detail);
  CHECK(r.ok);
  // x + x: both contributions reach x.
  Tensor x = with_grad(random_tensor({5}, 143));
  add_layer.forward(x, x).backward(Tensor::full({5}, 1.0f));
  CHECK(x.grad().to_vector() == std::vector<float>(5, 2.0f));

  const Format f = parse_format("e5m10");
  Add low;
  low.apply_numerics(policy("e5m10"));
  Tensor a = with_grad(random_tensor({300}, 144, -100, 100)), b = with_grad(random_tensor({300}, 145, -1, 1));
  Tensor gy = random_tensor({300}, 146);
  Tensor y = low.forward(a, b);
  y.backward(gy);
  std::vector<float> aq = quantized(f, a.to_vector()), bq = quantized(f, b.to_vector()), want(300);
  for (size_t i = 0; i < 300; ++i) want[i] = static_cast<float>(format_add(f, aq[i], bq[i]));
  REQUIRE_SAME_BITS(y.to_vector(), want);
  CHECK(a.grad().to_vector() == quantized(f, gy.to_vector()));
  CHECK(b.grad().to_vector() == quantized(f, gy.to_vector()));
  CHECK_THROWS_AS(low.forward(a, Tensor::zeros({3})), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Sequential

TEST_CASE("Sequential registers modules as 0, 1, ... and runs them in order") {
  auto l0 = std::make_shared<Linear>(4, 8);
  auto act = std::make_shared<GELU>();
  auto l2 = std::make_shared<Linear>(8, 3);
  Sequential net(l0, act, l2);
  net.initialize(17);
  REQUIRE(net.size() == 3);
  std::vector<std::string> names;
  for (auto& [name, t] : net.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(l2->path() == "2");
  CHECK(net.at(1)->type_name() == "GELU");
  CHECK_THROWS_AS(net.at(3), std::out_of_range);

  Tensor x = random_tensor({5, 4}, 151);
  CHECK(net.forward(x).to_vector() == l2->forward(act->forward(l0->forward(x))).to_vector());

  // Nested: the inner container's modules get dotted paths.
  Sequential outer;
  auto inner =
      outer.push_back(std::make_shared<Sequential>(std::make_shared<Linear>(2, 2), std::make_shared<Tanh>()));
  outer.push_back(std::make_shared<Flatten>());
  std::vector<std::string> outer_names;
  for (auto& [name, t] : outer.named_parameters()) outer_names.push_back(name);
  CHECK(outer_names == std::vector<std::string>{"0.0.weight", "0.0.bias"});
  CHECK(inner->at(1)->path() == "0.1");

  // Per-layer numerics by path reach the modules inside.
  NumericsPolicy p;
  p.set_override("1", "out", "e5m2");
  net.apply_numerics(p);
  CHECK(format_name(act->numerics().out()) == "e5m2");
  CHECK(format_name(l2->numerics().out()) == "fp32");
}

TEST_CASE("Sequential gradients pass finite differences") {
  Sequential net(std::make_shared<Linear>(3, 6), std::make_shared<SiLU>(), std::make_shared<Linear>(6, 4),
                 std::make_shared<Softmax>());
  net.initialize(23);
  std::vector<Tensor> inputs = {with_grad(random_tensor({2, 3}, 161))};
  for (Tensor& w : net.parameters()) inputs.push_back(w);
  auto r = grad_check([&](const std::vector<Tensor>& in) { return net.forward(in[0]); }, inputs);
  INFO(r.detail);
  CHECK(r.ok);
}
