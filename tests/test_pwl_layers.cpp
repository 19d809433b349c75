// Layers under piecewise-linear functions (functions.<name>: pwl:<K>):
//  * activation layers (forward and backward) and softmax's exp equal an
//    independent element-wise evaluation (linear piece search, round_value)
//    bit for bit in several formats;
//  * an LSTM's gates and state over several steps equal an independent
//    evaluation of the cell from the layer's gate pre-activations, bit for bit;
//  * the documented backward (the derivative of the approximation, R(gy * slope))
//    passes finite differences for activations, LSTM and GRU;
//  * training an LSTM and a GRU with tanh and sigmoid pwl:3 converges, twice to
//    identical bits.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/draw_key.h"
#include "layers/activation.h"
#include "layers/gru.h"
#include "layers/linear.h"
#include "layers/loss.h"
#include "layers/lstm.h"
#include "layers/shape_ops.h"
#include "layers/softmax.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/pwl.h"
#include "numerics/round.h"
#include "optim/adam.h"
#include "tests/grad_check.h"
#include "tests/test_util.h"

using namespace emu;

namespace {

// The documented pwl evaluation, written separately from numerics/pwl.h.
int piece_of(const FunctionApprox& fa, float x) {
  int k = 0;
  for (int j = 0; j < fa.pieces; ++j)
    if (fa.breaks[j] <= x) k = j;
  return k;
}
float ref_pwl(const FunctionApprox& fa, const Format& f, float x) {
  const int K = fa.pieces;
  if (x < fa.breaks[0] && fa.below_side != PwlSide::Extend)
    return static_cast<float>(round_value(f, fa.below_side == PwlSide::Constant ? fa.below : x));
  if (x > fa.breaks[K] && fa.above_side != PwlSide::Extend)
    return static_cast<float>(round_value(f, fa.above_side == PwlSide::Constant ? fa.above : x));
  const int k = piece_of(fa, x);
  const double p = round_value(f, static_cast<double>(fa.slope[k]) * x);
  return static_cast<float>(round_value(f, p + fa.intercept[k]));
}
float ref_slope(const FunctionApprox& fa, float x) {
  if (std::isnan(x)) return x;
  if (x < fa.breaks[0]) return fa.below_side == PwlSide::Constant ? 0.0f : 1.0f;
  if (x > fa.breaks[fa.pieces]) return fa.above_side == PwlSide::Constant ? 0.0f : 1.0f;
  return fa.slope[piece_of(fa, x)];
}
float R(const Format& f, double v) { return static_cast<float>(round_value(f, v)); }

std::shared_ptr<ActivationLayer> make_activation(Activation kind) {
  switch (kind) {
    case Activation::Gelu:
      return std::make_shared<GELU>();
    case Activation::Silu:
      return std::make_shared<SiLU>();
    case Activation::Tanh:
      return std::make_shared<Tanh>();
    case Activation::Sigmoid:
      return std::make_shared<Sigmoid>();
    default:
      return std::make_shared<ReLU>();
  }
}

const char* key_of(Activation kind) {
  switch (kind) {
    case Activation::Gelu:
      return "functions.gelu";
    case Activation::Silu:
      return "functions.silu";
    case Activation::Tanh:
      return "functions.tanh";
    default:
      return "functions.sigmoid";
  }
}

PwlFunction pwl_of(Activation kind) {
  switch (kind) {
    case Activation::Gelu:
      return PwlFunction::Gelu;
    case Activation::Silu:
      return PwlFunction::Silu;
    case Activation::Tanh:
      return PwlFunction::Tanh;
    default:
      return PwlFunction::Sigmoid;
  }
}

constexpr Activation kPwlActivations[] = {Activation::Gelu, Activation::Silu, Activation::Tanh,
                                          Activation::Sigmoid};

// Values in [lo, hi] at least `gap` away from every breakpoint of fa (finite differences see one piece).
Tensor away_from_breaks(const FunctionApprox& fa, const Shape& s, uint64_t seed, float lo, float hi,
                        float gap) {
  Tensor t = test::random_tensor(s, seed, lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i)
    for (int k = 0; k <= fa.pieces; ++k)
      if (std::fabs(t.data()[i] - fa.breaks[k]) < gap) t.data()[i] = fa.breaks[k] + 2 * gap;
  return t;
}

}  // namespace

TEST_CASE("pwl activations equal an independent element-wise evaluation bit for bit", "[pwl]") {
  for (const char* spec : {"fp32", "e5m10", "bf16:rtz", "fp8_e4m3", "posit16_1"}) {
    const Format f = parse_format(spec);
    for (Activation kind : kPwlActivations)
      for (const char* mode : {"pwl:3", "pwl:16", "pwl:-2,-0.5,0,0.25,2"}) {
        auto layer = make_activation(kind);
        NumericsPolicy p;
        p.set("format", spec);
        p.set(key_of(kind), mode);
        layer->apply_numerics(p);
        const FunctionApprox fa = parse_function_approx(pwl_of(kind), mode);
        Tensor x = test::random_tensor({6, 50}, 3, -10, 10);
        x.data()[0] = fa.breaks[1];
        x.data()[1] = -INFINITY;
        x.data()[2] = INFINITY;
        Tensor gy = test::random_tensor({6, 50}, 4, -2, 2);
        Tensor xg = x.clone().set_requires_grad(true);
        Tensor y = layer->forward(xg);
        y.backward(gy);
        const std::vector<float> xv = x.to_vector(), gv = gy.to_vector();
        std::vector<float> want_y(xv.size()), want_g(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) {
          const float xq = quantize(f, xv[i]), gq = quantize(f, gv[i]);
          want_y[i] = ref_pwl(fa, f, xq);
          want_g[i] = R(f, static_cast<double>(gq) * ref_slope(fa, xq));
        }
        INFO(spec << " " << activation_name(kind) << " " << mode);
        CHECK(test::mismatch(y.to_vector(), want_y) == "");
        CHECK(test::mismatch(xg.grad().to_vector(), want_g) == "");
      }
  }
}

TEST_CASE("pwl activation under :sr draws at the documented sites", "[pwl]") {
  // Product R(slope * x) at site 1 (stream + 1), the sum at site 0, element i at index i;
  // the backward's one rounding R(gy * slope) at site 0 of the GradInput key.
  const Format f = parse_format("e4m3:sr");
  Tanh t;
  NumericsPolicy p;
  p.set("format", "e4m3:sr");
  p.set("functions.tanh", "pwl:5");
  t.apply_numerics(p);
  t.initialize(5);
  const FunctionApprox fa = make_pwl(PwlFunction::Tanh, 5);
  Tensor x = test::random_tensor({500}, 81, -4, 4);
  Tensor xg = x.clone().set_requires_grad(true);
  Tensor gy = test::random_tensor({500}, 82, -1, 1);
  Tensor y = t.forward(xg);
  y.backward(gy);
  const DrawKey read = layer_draw_key(5, "", DrawSite::ReadInput, 0);
  const DrawKey fwd = layer_draw_key(5, "", DrawSite::Forward, 0);
  const DrawKey rgrad = layer_draw_key(5, "", DrawSite::ReadGrad, 0);
  const DrawKey gin = layer_draw_key(5, "", DrawSite::GradInput, 0);
  const std::vector<float> xv = x.to_vector(), gv = gy.to_vector();
  std::vector<float> want(xv.size()), want_g(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    const float xq = quantize(f, xv[i], philox_draw(read.seed, read.stream, i));
    const float gq = quantize(f, gv[i], philox_draw(rgrad.seed, rgrad.stream, i));
    const float sl = ref_slope(fa, xq);
    want_g[i] = static_cast<float>(round_value(f, double(gq) * sl, philox_draw(gin.seed, gin.stream, i)));
    if (xq < fa.breaks[0] || xq > fa.breaks[5]) {
      want[i] = quantize(f, xq < 0 ? -1.0f : 1.0f, philox_draw(fwd.seed, fwd.stream, i));
      continue;
    }
    const int k = piece_of(fa, xq);
    const double prod = round_value(f, double(fa.slope[k]) * xq, philox_draw(fwd.seed, fwd.stream + 1, i));
    want[i] =
        static_cast<float>(round_value(f, prod + fa.intercept[k], philox_draw(fwd.seed, fwd.stream, i)));
  }
  CHECK(test::mismatch(y.to_vector(), want) == "");
  CHECK(test::mismatch(xg.grad().to_vector(), want_g) == "");
}

TEST_CASE("softmax with a pwl exp equals an independent evaluation bit for bit", "[pwl]") {
  for (const char* spec : {"fp32", "e5m10", "bf16"}) {
    const Format f = parse_format(spec);
    Softmax sm;
    NumericsPolicy p;
    p.set("format", spec);
    p.set("acc", "fp32");
    p.set("functions.softmax_exp", "pwl:4");
    sm.apply_numerics(p);
    const FunctionApprox fa = make_pwl(PwlFunction::Exp, 4);
    const int64_t rows = 5, C = 12;
    Tensor x = test::random_tensor({rows, C}, 9, -6, 3);
    const std::vector<float> y = sm.forward(x).to_vector(), xv = x.to_vector();
    std::vector<float> want(y.size());
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> xq(C), e(C);
      float m = -INFINITY;
      for (int64_t j = 0; j < C; ++j) m = std::max(m, xq[j] = quantize(f, xv[r * C + j]));
      float s = 0.0f;  // fp32 sum, ascending, zero terms skipped
      for (int64_t j = 0; j < C; ++j) {
        e[j] = ref_pwl(fa, f, R(f, double(xq[j]) - m));
        if (e[j] != 0.0f) s = R(Format{}, double(s) + e[j]);
      }
      for (int64_t j = 0; j < C; ++j) want[r * C + j] = static_cast<float>(format_div(f, e[j], s));
    }
    INFO(spec);
    CHECK(test::mismatch(y, want) == "");
    // An exact softmax differs (pwl:4 is coarse).
    Softmax exact;
    NumericsPolicy q;
    q.set("format", spec);
    q.set("acc", "fp32");
    exact.apply_numerics(q);
    CHECK(test::mismatch(exact.forward(x).to_vector(), want) != "");
  }
}

TEST_CASE("LSTM gates under pwl equal an independent element-wise evaluation bit for bit", "[pwl]") {
  for (const char* spec : {"e5m10", "bf16", "fp32"}) {
    const Format f = parse_format(spec);
    const int64_t N = 2, T = 4, I = 3, H = 5;
    auto lstm = std::make_shared<LSTM>(I, H, 1, true, false);
    lstm->initialize(21);
    NumericsPolicy p;
    p.set("format", spec);
    p.set("acc", "fp32");
    p.set("functions.tanh", "pwl:3");
    p.set("functions.sigmoid", "pwl:-5,-2,-0.5,0.5,2,5");
    lstm->apply_numerics(p);
    lstm->keep_preactivations = true;
    const FunctionApprox th = make_pwl(PwlFunction::Tanh, 3),
                         sg = parse_function_approx(PwlFunction::Sigmoid, "pwl:-5,-2,-0.5,0.5,2,5");
    Tensor x = test::random_tensor({N, T, I}, 22, -3, 3);
    RecurrentOutput out = lstm->forward(x);
    const std::vector<float> pre = lstm->preactivations[0].to_vector(), y = out.output.to_vector(),
                             cn = out.c_n.to_vector();
    std::vector<float> want_y(y.size()), want_c(cn.size());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < H; ++j) {
        float c = 0.0f;
        for (int64_t t = 0; t < T; ++t) {
          const float* a = pre.data() + (n * T + t) * 4 * H + j;
          const float i = ref_pwl(sg, f, a[0]), fg = ref_pwl(sg, f, a[H]), g = ref_pwl(th, f, a[2 * H]),
                      o = ref_pwl(sg, f, a[3 * H]);
          c = R(f, double(R(f, double(fg) * c)) + R(f, double(i) * g));
          want_y[(n * T + t) * H + j] = R(f, double(o) * ref_pwl(th, f, c));
        }
        want_c[n * H + j] = c;
      }
    INFO(spec);
    CHECK(test::mismatch(y, want_y) == "");
    CHECK(test::mismatch(cn, want_c) == "");
  }
}

TEST_CASE("pwl backward (the slope of the piece) passes finite differences", "[pwl]") {
  for (Activation kind : kPwlActivations) {
    auto layer = make_activation(kind);
    NumericsPolicy p;
    p.set(key_of(kind), "pwl:8");
    layer->apply_numerics(p);
    const FunctionApprox fa = make_pwl(pwl_of(kind), 8);
    Tensor x =
        away_from_breaks(fa, {4, 9}, 31, fa.breaks[0] - 2, fa.breaks[8] + 2, 0.05f).set_requires_grad(true);
    auto r = test::grad_check([&](const std::vector<Tensor>& in) { return layer->forward(in[0]); }, {x});
    INFO(activation_name(kind) << ": " << r.detail);
    CHECK(r.ok);
    // And it is not the exact derivative: 1 - tanh^2 etc. differ from the slopes somewhere.
    Tensor xs = Tensor::from_vector(x.shape(), x.to_vector()).set_requires_grad(true);
    layer->forward(xs).backward(Tensor::from_vector(xs.shape(), std::vector<float>(xs.numel(), 1.0f)));
    std::vector<float> g = xs.grad().to_vector();
    for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == ref_slope(fa, x.to_vector()[i]));
  }
  // Softmax with a pwl exp: the backward is the exact softmax's formula from y (documented),
  // so it is checked only as that formula (the existing softmax tests), not against differences.

  for (bool gru : {false, true}) {
    const int64_t N = 2, T = 3, I = 3, H = 4;
    NumericsPolicy p;
    p.set("functions.tanh", "pwl:3");
    p.set("functions.sigmoid", "pwl:3");
    std::shared_ptr<Module> m;
    std::function<Tensor(const std::vector<Tensor>&)> f;
    std::vector<Tensor> inputs = {test::random_tensor({N, T, I}, 41).set_requires_grad(true)};
    if (gru) {
      auto g = std::make_shared<GRU>(I, H);
      g->initialize(42);
      g->apply_numerics(p);
      m = g;
      f = [g](const std::vector<Tensor>& in) { return reshape(g->forward(in[0]).output, {-1}); };
    } else {
      auto l = std::make_shared<LSTM>(I, H);
      l->initialize(42);
      l->apply_numerics(p);
      m = l;
      f = [l](const std::vector<Tensor>& in) {
        RecurrentOutput r = l->forward(in[0]);
        return concat({reshape(r.output, {-1}), reshape(r.c_n, {-1})}, 0);
      };
    }
    for (const Tensor& t : m->parameters()) inputs.push_back(t);
    auto r = test::grad_check(f, inputs, 1e-3);
    INFO((gru ? "GRU" : "LSTM") << ": " << r.detail);
    CHECK(r.ok);
  }
}

namespace {

constexpr int64_t kSteps = 10, kHidden = 16;

class SumModel : public Module {
 public:
  explicit SumModel(bool gru) {
    if (gru)
      gru_ = register_module("rnn", std::make_shared<GRU>(1, kHidden));
    else
      lstm_ = register_module("rnn", std::make_shared<LSTM>(1, kHidden));
    head_ = register_module("head", std::make_shared<Linear>(kHidden, 1));
  }
  Tensor forward(const Tensor& x) {
    RecurrentOutput r = gru_ ? gru_->forward(x) : lstm_->forward(x);
    return head_->forward(reshape(r.h_n, {x.dim(0), kHidden}));
  }

 private:
  std::shared_ptr<LSTM> lstm_;
  std::shared_ptr<GRU> gru_;
  std::shared_ptr<Linear> head_;
};

// Regress the mean of kSteps numbers in [-1, 1]: returns the held-out MSE and
// the concatenated final weights.
std::pair<double, std::vector<float>> train_mean(bool gru, const NumericsPolicy& policy) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  auto make = [&](int64_t n, Tensor* x, Tensor* y) {
    std::vector<float> xv, yv;
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t t = 0; t < kSteps; ++t) xv.push_back(u(rng)), s += xv.back();
      yv.push_back(static_cast<float>(s / kSteps * 2));
    }
    *x = Tensor::from_vector({n, kSteps, 1}, xv);
    *y = Tensor::from_vector({n, 1}, yv);
  };
  Tensor x, y, tx, ty;
  make(512, &x, &y);
  make(256, &tx, &ty);
  auto model = std::make_shared<SumModel>(gru);
  model->initialize(5);
  model->apply_numerics(policy);
  auto loss_fn = std::make_shared<MSELoss>();
  Adam opt(model->named_parameters(), AdamOptions{0.02f});
  for (int e = 0; e < 10; ++e)
    for (int64_t s = 0; s + 32 <= 512; s += 32) {
      model->train();
      opt.zero_grad();
      Tensor loss =
          loss_fn->forward(model->forward(x.narrow(0, s, 32).contiguous()), y.narrow(0, s, 32).contiguous());
      loss.backward();
      opt.step();
      model->context().step += 1;
    }
  std::vector<float> w;
  for (auto& [_, p] : model->named_parameters()) {
    std::vector<float> v = p.to_vector();
    w.insert(w.end(), v.begin(), v.end());
  }
  model->eval();
  NoGradGuard no_grad;
  const std::vector<float> pred = model->forward(tx).to_vector(), want = ty.to_vector();
  double mse = 0;
  for (size_t i = 0; i < pred.size(); ++i) mse += (pred[i] - double(want[i])) * (pred[i] - double(want[i]));
  return {mse / pred.size(), w};
}

}  // namespace

TEST_CASE("training an LSTM and a GRU with tanh and sigmoid pwl:3 converges, twice to the same bits",
          "[pwl][train]") {
  // Target variance: 4 * (1/3) / kSteps = 0.133 (the MSE of predicting 0).
  for (bool gru : {false, true})
    for (const char* format : {"fp32", "bf16"}) {
      NumericsPolicy p;
      p.set("format", format);
      p.set("acc", "fp32");
      p.set("functions.tanh", "pwl:3");
      p.set("functions.sigmoid", "pwl:3");
      const auto a = train_mean(gru, p), b = train_mean(gru, p);
      WARN((gru ? "GRU " : "LSTM ") << format << ": held-out MSE " << a.first);
      CHECK(a.first < 0.01);
      REQUIRE(a.second.size() == b.second.size());
      CHECK(std::memcmp(a.second.data(), b.second.data(), a.second.size() * sizeof(float)) == 0);
    }
}
