// Losses: cross-entropy (ignore_index, label smoothing, PyTorch semantics) and
// mean squared error:
//  * hand-computed values and gradients;
//  * float64 references and finite-difference gradients in plain fp32;
//  * under e5m10, a literal loop of numerics/round.h operations in the
//    documented order equals the layer bit for bit, forward and backward;
//  * a small network trained with them learns.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <vector>

#include "core/autograd.h"
#include "layers/activation.h"
#include "layers/linear.h"
#include "layers/loss.h"
#include "layers/sequential.h"
#include "numerics/format_spec.h"
#include "numerics/functions.h"
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

Tensor with_grad(Tensor t) {
  t.set_requires_grad(true);
  return t;
}

std::vector<float> quantized(const Format& f, const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = quantize(f, v[i]);
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (float_bits(a[i]) != float_bits(b[i])) return false;
  return true;
}

// Cross-entropy in float64: mean over kept rows of -sum_j q_j log_softmax_j.
double reference_ce(const std::vector<float>& x, const std::vector<int64_t>& t, int64_t C, int64_t ignore,
                    double eps) {
  double total = 0;
  int64_t count = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    if (t[r] == ignore) continue;
    ++count;
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < C; ++j) m = std::max(m, double(x[r * C + j]));
    for (int64_t j = 0; j < C; ++j) s += std::exp(x[r * C + j] - m);
    for (int64_t j = 0; j < C; ++j) {
      double q = eps / C + (j == t[r] ? 1 - eps : 0);
      total -= q * (x[r * C + j] - m - std::log(s));
    }
  }
  return total / count;
}

}  // namespace

// ---------------------------------------------------------------------------
// Cross-entropy

TEST_CASE("cross-entropy hand-computed: label smoothing and ignore_index") {
  // Row 0: logits (0, ln 3): softmax (1/4, 3/4), log_softmax (ln 1/4, ln 3/4) =
  //        (-1.3862944, -0.2876821); target 1.
  // Row 1: target -100 = ignore_index: adds nothing, not counted.
  // eps = 0.2, C = 2: q = (0.1, 0.9);
  //   loss = -(0.1 ln 1/4 + 0.9 ln 3/4) = 0.13862944 + 0.25891387 = 0.39754331 (mean over 1 row);
  //   d loss / d logits row 0 = softmax - q = (0.25 - 0.1, 0.75 - 0.9) = (0.15, -0.15); row 1: 0.
  // eps = 0: loss = -ln 3/4 = 0.28768207, gradient (0.25, -0.25).
  const float ln3 = static_cast<float>(std::log(3.0));
  for (float eps : {0.2f, 0.0f}) {
    CrossEntropyLoss ce(CrossEntropyOptions{-100, eps});
    Tensor logits = with_grad(Tensor::from_vector({2, 2}, {0.0f, ln3, 5.0f, -2.0f}));
    Tensor loss = ce.forward(logits, std::vector<int64_t>{1, -100});
    REQUIRE(loss.shape() == Shape{});
    loss.backward();
    std::vector<float> g = logits.grad().to_vector();
    INFO("eps = " << eps);
    if (eps > 0) {
      CHECK(loss.item() == Approx(0.39754331).epsilon(1e-6));
      CHECK(g[0] == Approx(0.15).margin(1e-6));
      CHECK(g[1] == Approx(-0.15).margin(1e-6));
    } else {
      CHECK(loss.item() == Approx(0.28768207).epsilon(1e-6));
      CHECK(g[0] == Approx(0.25).margin(1e-6));
      CHECK(g[1] == Approx(-0.25).margin(1e-6));
    }
    CHECK(g[2] == 0.0f);
    CHECK(g[3] == 0.0f);
  }
}

TEST_CASE("cross-entropy: the mean divides by the rows not ignored") {
  // Three rows of equal logits over C = 4 classes: each row's loss is ln 4 = 1.3862944;
  // with one row ignored (ignore_index = 2, a valid class) the mean is still ln 4,
  // and each kept row's gradient is (1/4 - onehot) / 2.
  CrossEntropyLoss ce(CrossEntropyOptions{2, 0.0f});
  Tensor logits = with_grad(Tensor::full({3, 4}, 0.5f));
  Tensor loss = ce.forward(logits, std::vector<int64_t>{0, 2, 3});
  CHECK(loss.item() == Approx(std::log(4.0)).epsilon(1e-6));
  loss.backward();
  std::vector<float> g = logits.grad().to_vector();
  CHECK(g[0] == Approx(-0.375).margin(1e-7));
  CHECK(g[1] == Approx(0.125).margin(1e-7));
  for (int j = 4; j < 8; ++j) CHECK(g[j] == 0.0f);
  CHECK(g[11] == Approx(-0.375).margin(1e-7));
  // Label smoothing 1: the target is uniform, so equal logits give ln 4 and zero gradient.
  CrossEntropyLoss uniform(CrossEntropyOptions{-100, 1.0f});
  logits.zero_grad();
  Tensor l2 = uniform.forward(logits, std::vector<int64_t>{0, 1, 2});
  CHECK(l2.item() == Approx(std::log(4.0)).epsilon(1e-6));
  l2.backward();
  for (float v : logits.grad().to_vector()) CHECK(std::fabs(v) < 1e-7);
}

TEST_CASE("cross-entropy with every row ignored is NaN with a zero gradient") {
  CrossEntropyLoss ce;
  Tensor logits = with_grad(random_tensor({2, 3}, 1));
  Tensor loss = ce.forward(logits, std::vector<int64_t>{-100, -100});
  CHECK(std::isnan(loss.item()));
  loss.backward();
  CHECK(logits.grad().to_vector() == std::vector<float>(6, 0.0f));
}

TEST_CASE("cross-entropy matches float64 and passes finite differences in plain fp32") {
  const int64_t N = 6, C = 5;
  Tensor logits = random_tensor({N, C}, 2, -3, 3);
  const std::vector<int64_t> targets = {4, 0, -100, 2, 2, 1};
  for (float eps : {0.0f, 0.1f, 0.35f}) {
    CrossEntropyLoss ce(CrossEntropyOptions{-100, eps});
    const double ref = reference_ce(logits.to_vector(), targets, C, -100, eps);
    INFO("eps = " << eps);
    CHECK(std::fabs(ce.forward(logits, targets).item() - ref) <= 1e-6 * std::fabs(ref) + 1e-7);
    auto r = grad_check([&](const std::vector<Tensor>& in) { return ce.forward(in[0], targets); },
                        {with_grad(logits.clone())});
    INFO(r.detail);
    CHECK(r.ok);
  }
}

TEST_CASE("cross-entropy targets: tensor and vector forms agree, bad targets are errors") {
  CrossEntropyLoss ce(CrossEntropyOptions{-1, 0.05f});
  Tensor logits = random_tensor({3, 4}, 3);
  const float a = ce.forward(logits, std::vector<int64_t>{3, -1, 0}).item();
  const float b = ce.forward(logits, Tensor::from_vector({3}, {3.0f, -1.0f, 0.0f})).item();
  CHECK(float_bits(a) == float_bits(b));
  CHECK_THROWS_AS(ce.forward(logits, std::vector<int64_t>{4, 0, 0}), std::invalid_argument);
  CHECK_THROWS_AS(ce.forward(logits, std::vector<int64_t>{-2, 0, 0}), std::invalid_argument);
  CHECK_THROWS_AS(ce.forward(logits, Tensor::from_vector({3}, {0.5f, 0.0f, 0.0f})), std::invalid_argument);
  CHECK_THROWS_AS(ce.forward(logits, std::vector<int64_t>{0, 0}), std::invalid_argument);
  CHECK_THROWS_AS(ce.forward(Tensor::zeros({3}), std::vector<int64_t>{0, 0, 0}), std::invalid_argument);
  CHECK_THROWS_AS(CrossEntropyLoss(CrossEntropyOptions{-100, 1.5f}), std::invalid_argument);
}

// Every IEEE rounding mode, fn, finite-only, :nosub and :sat formats, posits, fixed point.
const char* const kLiteralFormats[] = {"e5m10",    "bf16:rtz",  "fp8_e4m3", "e5m2:rup",  "e4m3:rdn:nosub",
                                       "fp6_e2m3", "e5m10:rna", "fp32:rup", "posit16_1", "fixed16_8"};

TEST_CASE("cross-entropy equals a literal reference loop bit for bit in many formats") {
  const int64_t N = 6, C = 7;
  const float eps = 0.1f;
  Tensor logits = random_tensor({N, C}, 4, -4, 4);
  const std::vector<int64_t> t = {3, -100, 0, 6, 6, 1};
  for (const char* spec : kLiteralFormats) {
    INFO(spec);
    const Format f = parse_format(spec);
    CrossEntropyLoss ce(CrossEntropyOptions{-100, eps});
    ce.apply_numerics(policy(spec));
    Tensor lg = with_grad(logits.clone());
    Tensor loss = ce.forward(lg, t);
    loss.backward();

    // The smoothed targets: off = R(eps / C), on = R(R(1 - eps) + off).
    const double off = format_div(f, eps, double(C));
    const double on = format_add(f, format_sub(f, 1.0, eps), off);
    const SmoothingWeights w = smoothing_weights(f, eps, C);
    CHECK(w.off == float(off));
    CHECK(w.on == float(on));
    const std::vector<float> x = quantized(f, logits.to_vector());
    std::vector<float> logp(x.size());
    double total = 0;
    int count = 0;
    for (int64_t r = 0; r < N; ++r) {
      const float* xr = &x[r * C];
      float m = -INFINITY;
      for (int64_t j = 0; j < C; ++j) m = std::max(m, xr[j]);
      std::vector<float> d(C);
      double sum = 0;
      for (int64_t j = 0; j < C; ++j) {
        d[j] = float(format_sub(f, xr[j], m));
        float e = quantize(f, fn_exp(d[j]));
        if (e != 0) sum = format_add(f, sum, e);  // acc = f, products e * 1 exact
      }
      float l = quantize(f, fn_log(float(sum)));
      for (int64_t j = 0; j < C; ++j) logp[r * C + j] = float(format_sub(f, d[j], l));
      if (t[r] < 0) continue;
      ++count;
      double row = 0;
      for (int64_t j = 0; j < C; ++j) {
        const double q = j == t[r] ? on : off;
        if (q != 0 && logp[r * C + j] != 0) row = format_add(f, row, format_mul(f, q, logp[r * C + j]));
      }
      total = format_add(f, total, -row);
    }
    const float want_loss = float(format_div(f, total, count));
    CHECK(float_bits(loss.item()) == float_bits(want_loss));

    // Backward from d loss = 1: w = R(1 / count); gx = R(R(R(exp(logp)) - q) * w).
    const double wgt = format_div(f, 1.0, count);
    std::vector<float> want_g(x.size(), 0.0f);
    for (int64_t r = 0; r < N; ++r) {
      if (t[r] < 0) continue;
      for (int64_t j = 0; j < C; ++j) {
        float p = quantize(f, fn_exp(logp[r * C + j]));
        double diff = format_sub(f, p, j == t[r] ? on : off);
        want_g[r * C + j] = float(format_mul(f, diff, wgt));
      }
    }
    CHECK(same_bits(lg.grad().to_vector(), want_g));
  }
  // And the e5m10 value is close to float64.
  CrossEntropyLoss ce(CrossEntropyOptions{-100, eps});
  ce.apply_numerics(policy("e5m10"));
  CHECK(ce.forward(logits, t).item() ==
        Approx(reference_ce(logits.to_vector(), t, C, -100, eps)).epsilon(5e-3));
}

TEST_CASE("cross-entropy: layer-level emulation rounds the fp32 loss once") {
  NumericsPolicy p = policy("e5m10");
  p.set("emulation", "layer");
  CrossEntropyLoss plain, emulated;
  emulated.apply_numerics(p);
  Tensor logits = random_tensor({5, 9}, 5, -3, 3);
  const std::vector<int64_t> t = {1, 2, 3, 4, 5};
  CHECK(emulated.forward(logits, t).item() ==
        quantize(parse_format("e5m10"), plain.forward(logits, t).item()));
}

// ---------------------------------------------------------------------------
// Mean squared error

TEST_CASE("MSE: hand-computed value and gradients") {
  // x = (1, 2, 4), t = (0, 2, 1): diff (1, 0, 3), loss = (1 + 0 + 9) / 3 = 10/3;
  // d/dx = 2 diff / 3 = (2/3, 0, 2), d/dt = -(2/3, 0, 2).
  MSELoss mse;
  Tensor x = with_grad(Tensor::from_vector({3}, {1, 2, 4}));
  Tensor t = with_grad(Tensor::from_vector({3}, {0, 2, 1}));
  Tensor loss = mse.forward(x, t);
  CHECK(loss.item() == 10.0f / 3.0f);
  loss.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{2.0f / 3.0f, 0.0f, 2.0f});
  CHECK(t.grad().to_vector() == std::vector<float>{-2.0f / 3.0f, -0.0f, -2.0f});
  CHECK_THROWS_AS(mse.forward(x, Tensor::zeros({4})), std::invalid_argument);
}

TEST_CASE("MSE matches float64 and passes finite differences in plain fp32") {
  MSELoss mse;
  Tensor x = random_tensor({4, 6}, 6, -2, 2), t = random_tensor({4, 6}, 7, -2, 2);
  std::vector<float> xv = x.to_vector(), tv = t.to_vector();
  double ref = 0;
  for (size_t i = 0; i < xv.size(); ++i) ref += (double(xv[i]) - tv[i]) * (double(xv[i]) - tv[i]);
  ref /= xv.size();
  CHECK(std::fabs(mse.forward(x, t).item() - ref) <= 2e-6 * ref);
  auto r = grad_check([&](const std::vector<Tensor>& in) { return mse.forward(in[0], in[1]); },
                      {with_grad(x.clone()), with_grad(t.clone())});
  INFO(r.detail);
  CHECK(r.ok);
}

TEST_CASE("MSE equals a literal reference loop bit for bit in many formats") {
  for (const char* spec : kLiteralFormats) {
    INFO(spec);
    const Format f = parse_format(spec);
    MSELoss mse;
    mse.apply_numerics(policy(spec));
    Tensor x = with_grad(random_tensor({50}, 8, -3, 3)), t = with_grad(random_tensor({50}, 9, -3, 3));
    Tensor loss = mse.forward(x, t);
    loss.backward();
    const std::vector<float> xq = quantized(f, x.to_vector()), tq = quantized(f, t.to_vector());
    std::vector<float> d(50);
    double total = 0;
    for (size_t i = 0; i < 50; ++i) {
      d[i] = float(format_sub(f, xq[i], tq[i]));
      if (d[i] != 0) total = format_add(f, total, format_mul(f, d[i], d[i]));
    }
    CHECK(float_bits(loss.item()) == float_bits(float(format_div(f, total, 50.0))));
    const double w = format_div(f, 2.0, 50.0);
    std::vector<float> gx(50), gt(50);
    for (size_t i = 0; i < 50; ++i) {
      gx[i] = float(format_mul(f, d[i], w));
      gt[i] = float(format_mul(f, -d[i], w));
    }
    CHECK(same_bits(x.grad().to_vector(), gx));
    CHECK(same_bits(t.grad().to_vector(), gt));
  }
}

// ---------------------------------------------------------------------------
// End to end

TEST_CASE("a small network learns with cross-entropy, in fp32 and in e5m10") {
  for (const char* format : {"fp32", "e5m10"}) {
    Sequential net(std::make_shared<Linear>(4, 16), std::make_shared<GELU>(),
                   std::make_shared<Linear>(16, 3));
    net.initialize(31);
    net.apply_numerics(policy(format));
    CrossEntropyLoss ce(CrossEntropyOptions{-100, 0.05f});
    ce.apply_numerics(policy(format));
    // Labels: which of three fixed directions a point leans to most.
    Tensor x = random_tensor({64, 4}, 32);
    std::vector<float> xv = x.to_vector();
    std::vector<int64_t> labels;
    for (int i = 0; i < 64; ++i) {
      const float* p = &xv[i * 4];
      float s[3] = {p[0] + p[1], p[2] - p[0], p[3] - p[1]};
      labels.push_back(std::max_element(s, s + 3) - s);
    }
    float first = 0, last = 0;
    for (int step = 0; step < 60; ++step) {
      net.zero_grad();
      Tensor loss = ce.forward(net.forward(x), labels);
      if (step == 0) first = loss.item();
      last = loss.item();
      loss.backward();
      NoGradGuard guard;
      for (Tensor& w : net.parameters()) {
        std::vector<float> g = w.grad().to_vector();
        for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] -= 0.5f * g[i];
      }
    }
    INFO(format << ": loss " << first << " -> " << last);
    CHECK(last < 0.5f * first);
  }
}
