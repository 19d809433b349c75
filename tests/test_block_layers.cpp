// Block formats in layers: a Linear and a Conv2d reading in MX formats equal an
// independent per-block reference (frexp scales, nearest-value search over the
// element's value list, float64 checks), policies treat block formats as read
// formats only, and a small MLP trains in mxfp8 (twice to identical bits).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "core/autograd.h"
#include "layers/activation.h"
#include "layers/conv1d.h"
#include "layers/conv2d.h"
#include "layers/layer_io.h"
#include "layers/linear.h"
#include "layers/loss.h"
#include "layers/sequential.h"
#include "numerics/format_spec.h"
#include "optim/sgd.h"
#include "tests/grad_check.h"

using namespace emu;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The finite non-negative values of an OCP element type with e exponent and m fraction bits
// (bias 2^(e-1) - 1, subnormals), ascending; `fn`: the top code is NaN (e4m3).
std::vector<double> element_values(int e, int m, bool fn) {
  std::vector<double> v;
  const int bias = (1 << (e - 1)) - 1;
  for (int ex = 0; ex < (1 << e); ++ex)
    for (int f = 0; f < (1 << m); ++f) {
      if (fn && ex == (1 << e) - 1 && f == (1 << m) - 1) continue;
      v.push_back(ex == 0 ? std::ldexp(f, 1 - bias - m) : std::ldexp((1 << m) + f, ex - bias - m));
    }
  return v;
}

// Nearest element value, ties to the even code (codes are ascending, so the even index), saturating.
double nearest(const std::vector<double>& vals, double x) {
  const double a = std::fabs(x);
  if (a >= vals.back()) return std::copysign(vals.back(), x);
  size_t i = 0;
  while (vals[i + 1] <= a) ++i;
  const double lo = vals[i], hi = vals[i + 1];
  double r = a - lo < hi - a ? lo : hi - a < a - lo ? hi : (i % 2 == 0 ? lo : hi);
  return std::copysign(r, x);
}

// Reference MX quantization of a row-major [outer, len, inner] tensor, blocks of 32 along len.
std::vector<float> mx_reference(const std::vector<float>& x, int64_t outer, int64_t len, int64_t inner, int e,
                                int m, bool fn) {
  const std::vector<double> vals = element_values(e, m, fn);
  int emax = 0;
  std::frexp(vals.back(), &emax);
  emax -= 1;  // floor(log2(max))
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t k0 = 0; k0 < len; k0 += 32) {
        const int64_t k1 = std::min(len, k0 + 32);
        double amax = 0;
        for (int64_t k = k0; k < k1; ++k)
          amax = std::max(amax, std::fabs(double(x[(o * len + k) * inner + i])));
        int ex = 0;
        std::frexp(amax, &ex);
        const int s = amax == 0 ? -127 : std::max(-127, ex - 1 - emax);
        for (int64_t k = k0; k < k1; ++k) {
          const int64_t idx = (o * len + k) * inner + i;
          y[idx] = static_cast<float>(std::ldexp(nearest(vals, std::ldexp(double(x[idx]), -s)), s));
        }
      }
  return y;
}

NumericsPolicy policy_of(std::vector<std::pair<std::string, std::string>> kv) {
  NumericsPolicy p;
  for (auto& [k, v] : kv) p.set(k, v);
  return p;
}

}  // namespace

TEST_CASE("the reference quantizer agrees with quantize_blocks on random blocks", "[blocks]") {
  Tensor t = test::random_tensor({5, 70}, 3, -3, 3);
  std::vector<float> x = t.to_vector();
  x[3] = 0x1p-12f;  // a block-relative subnormal
  for (auto [spec, e, m, fn] :
       {std::tuple{"mxfp8_e4m3", 4, 3, true}, std::tuple{"mxfp4", 2, 1, false},
        std::tuple{"mxfp6_e3m2", 3, 2, false}, std::tuple{"mxfp8_e5m2", 5, 2, false}}) {
    INFO(spec);
    Tensor y = read_as(parse_format(spec), Tensor::from_vector({5, 70}, x), DrawKey{});
    CHECK(same_bits(y.to_vector(), mx_reference(x, 5, 70, 1, e, m, fn)));
  }
}

TEST_CASE("Linear reading weights and activations in mxfp8_e4m3 equals a per-block reference",
          "[blocks][linear]") {
  const int64_t in = 40, out = 3, rows = 4;  // 40 = a block of 32 and a partial block of 8 per row
  auto layer = std::make_shared<Linear>(in, out, false);
  layer->initialize(5);
  NumericsPolicy p = policy_of({{"weights", "mxfp8_e4m3"}, {"activations", "mxfp8_e4m3"}});
  layer->apply_numerics(p);
  Tensor x = test::random_tensor({rows, in}, 6, -4, 4);
  std::vector<float> y = layer->forward(x).to_vector();

  std::vector<float> xq = mx_reference(x.to_vector(), rows, in, 1, 4, 3, true);
  std::vector<float> wq = mx_reference(layer->weight.to_vector(), out, in, 1, 4, 3, true);
  CHECK_FALSE(same_bits(xq, x.to_vector()));
  std::vector<float> want(rows * out);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < out; ++j) {
      float acc = 0;  // fp32 products and sums in in-feature order (the default mul/acc/out)
      for (int64_t k = 0; k < in; ++k) {
        const float prod = xq[i * in + k] * wq[j * in + k];
        acc = acc + prod;
      }
      want[i * out + j] = acc;
    }
  CHECK(same_bits(y, want));
}

// The incoming gradient is read in blocks along the grad-input reduction (output channels at each
// position), the rows read_grad's layout names, not along the last dimension (W).
TEST_CASE("Conv2d reads its incoming gradient in blocks along output channels at each position",
          "[blocks][conv2d]") {
  const int64_t C_out = 40, H = 2, W = 3;  // 40 channels: a block of 32 and a partial block of 8
  auto conv = std::make_shared<Conv2d>(2, C_out, 1);
  conv->initialize(11);
  conv->apply_numerics(policy_of({{"grads", "mxfp4"}}));
  Tensor x = test::random_tensor({2, 2, H, W}, 12, -2, 2).set_requires_grad(true);
  const Tensor gy = test::random_tensor({2, C_out, H, W}, 13, -4, 4);
  conv->forward(x).backward(gy);
  // The same conv in fp32, its backward fed the gradient quantized per (n, h, w) channel vector.
  auto plain = std::make_shared<Conv2d>(2, C_out, 1);
  plain->weight.copy_from(conv->weight);
  plain->bias.copy_from(conv->bias);
  auto plain_grad = [&](const std::vector<float>& g) {
    Tensor xp = Tensor::from_vector(x.shape(), x.to_vector()).set_requires_grad(true);
    plain->forward(xp).backward(Tensor::from_vector({2, C_out, H, W}, g));
    return xp.grad().to_vector();
  };
  const std::vector<float> along_channels = mx_reference(gy.to_vector(), 2, C_out, H * W, 2, 1, false);
  const std::vector<float> along_w = mx_reference(gy.to_vector(), 2 * C_out * H, W, 1, 2, 1, false);
  CHECK(same_bits(x.grad().to_vector(), plain_grad(along_channels)));
  CHECK_FALSE(same_bits(x.grad().to_vector(), plain_grad(along_w)));
}

TEST_CASE("Conv2d reads activations in blocks along input channels at each position", "[blocks][conv2d]") {
  // 1x1 kernel over 40 input channels: the reduction is the channel vector at each (h, w).
  const int64_t C = 40, H = 2, W = 3;
  auto conv = std::make_shared<Conv2d>(C, 2, 1);
  conv->initialize(8);
  Tensor x = test::random_tensor({2, C, H, W}, 9, -2, 2);
  conv->apply_numerics(policy_of({{"activations", "mxfp4"}}));
  std::vector<float> y = conv->forward(x).to_vector();
  // The same conv in fp32 on the input quantized per (n, h, w) channel vector by the reference.
  auto plain = std::make_shared<Conv2d>(C, 2, 1);
  plain->weight.copy_from(conv->weight);
  plain->bias.copy_from(conv->bias);
  Tensor xq = Tensor::from_vector({2, C, H, W}, mx_reference(x.to_vector(), 2, C, H * W, 2, 1, false));
  CHECK(same_bits(y, plain->forward(xq).to_vector()));
  // ... which is not what blocks along the last dimension (W) would give.
  Tensor xw = Tensor::from_vector({2, C, H, W}, mx_reference(x.to_vector(), 2 * C * H, W, 1, 2, 1, false));
  CHECK_FALSE(same_bits(y, plain->forward(xw).to_vector()));
}

TEST_CASE("Conv1d reads activations in blocks along input channels at each position", "[blocks][conv1d]") {
  const int64_t C = 36, L = 5;  // 36 = a block of 32 and a partial block of 4 at each position
  auto conv = std::make_shared<Conv1d>(C, 3, 1);
  conv->initialize(10);
  Tensor x = test::random_tensor({2, C, L}, 11, -2, 2);
  conv->apply_numerics(policy_of({{"activations", "mxfp6_e2m3"}}));
  std::vector<float> y = conv->forward(x).to_vector();
  auto plain = std::make_shared<Conv1d>(C, 3, 1);
  plain->weight.copy_from(conv->weight);
  plain->bias.copy_from(conv->bias);
  Tensor xq = Tensor::from_vector({2, C, L}, mx_reference(x.to_vector(), 2, C, L, 2, 3, false));
  CHECK(same_bits(y, plain->forward(xq).to_vector()));
  CHECK_FALSE(same_bits(y, plain->forward(x).to_vector()));
}

TEST_CASE("policies: block formats are read formats only", "[blocks][policy]") {
  LayerNumerics n = policy_of({{"format", "mxfp8_e4m3"}}).resolve("fc");
  CHECK(format_name(n.weights) == "mxfp8_e4m3");
  CHECK(format_name(n.activations) == "mxfp8_e4m3");
  CHECK(format_name(n.grads) == "mxfp8_e4m3");
  CHECK(is_plain_fp32(n.mac.mul));
  CHECK(is_plain_fp32(n.mac.acc));
  CHECK(is_plain_fp32(n.out()));
  CHECK_FALSE(n.passthrough());
  for (const char* key : {"mul", "acc", "out", "acc_outer"}) {
    INFO(key);
    NumericsPolicy p;
    try {
      p.set(key, "mxfp4");
      FAIL("no error");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find("block format") != std::string::npos);
      CHECK(std::string(e.what()).find("read formats only") != std::string::npos);
    }
  }
  // backward reductions round their results to fp32 when grads is a block format.
  CHECK(is_plain_fp32(backward_mac(n).out));
}

TEST_CASE("read_as: blocks along the last dimension by default, along the layout's rows when given",
          "[blocks]") {
  std::vector<float> v = {256, 1, 0.001f, 0.01f};  // [2, 2]
  Tensor t = Tensor::from_vector({2, 2}, v);
  const Format f = parse_format("mxfp8_e4m3");
  // Rows (256, 1): X = 1, exact; (0.001, 0.01): s = -7 - 8 = -15: 0.001 * 2^15 = 32.8 -> 32 (ulp 4) ->
  // 2^-10, 0.01 * 2^15 = 327.7 -> 320 (ulp 32) -> 0.009765625.
  CHECK(same_bits(read_as(f, t, DrawKey{}).to_vector(), {256, 1, 0x1p-10f, 0.009765625f}));
  // Columns (256, 0.001): X = 1: 0.001 = 0.51 * 2^-9 -> 2^-9; (1, 0.01): s = -8: 2.56 -> 2.5 -> 0.009765625.
  CHECK(
      same_bits(read_as(f, t, DrawKey{}, ReadLayout{1, 2, 2}).to_vector(), {256, 1, 0x1p-9f, 0.009765625f}));
  // Scalar formats ignore the layout.
  const Format e5m2 = parse_format("e5m2");
  CHECK(same_bits(read_as(e5m2, t, DrawKey{}, ReadLayout{1, 2, 2}).to_vector(),
                  read_as(e5m2, t, DrawKey{}).to_vector()));
  // Layout disagreeing with the tensor: an error, not a silent misread.
  CHECK_THROWS(read_as(f, t, DrawKey{}, ReadLayout{1, 3, 2}));
}

namespace {

struct Blobs {
  Tensor x, y;
  int64_t n;
};

Blobs blobs(int64_t n) {  // three Gaussian blobs in 8 dimensions
  std::mt19937_64 rng(1);
  std::normal_distribution<float> noise(0, 0.6f);
  std::vector<float> x, y;
  for (int64_t i = 0; i < n; ++i) {
    int c = static_cast<int>(i % 3);
    for (int d = 0; d < 8; ++d) x.push_back((d % 3 == c ? 1.5f : -0.5f) + noise(rng));
    y.push_back(static_cast<float>(c));
  }
  return {Tensor::from_vector({n, 8}, x), Tensor::from_vector({n}, y), n};
}

struct Result {
  std::vector<float> weights, losses;
  double accuracy = 0;
};

Result train_mlp(const Blobs& data, const NumericsPolicy& policy, int steps) {
  auto model = std::make_shared<Sequential>();
  model->push_back(std::make_shared<Linear>(8, 48));
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<Linear>(48, 3));
  model->initialize(42);
  model->apply_numerics(policy);
  auto loss_fn = std::make_shared<CrossEntropyLoss>();
  loss_fn->apply_numerics(policy);
  SgdOptions o;
  o.lr = 0.1f;
  o.momentum = 0.9f;
  SGD opt(model->named_parameters(), o);
  Result r;
  const int64_t batch = 24;
  for (int s = 0; s < steps; ++s) {
    const int64_t start = (s * batch) % data.n;
    Tensor xb = data.x.narrow(0, start, batch).contiguous(), yb = data.y.narrow(0, start, batch).contiguous();
    model->train();
    opt.zero_grad();
    Tensor loss = loss_fn->forward(model->forward(xb), yb);
    loss.backward();
    opt.step();
    model->context().step += 1;
    r.losses.push_back(loss.item());
  }
  for (auto& [_, p] : model->named_parameters()) {
    std::vector<float> v = p.to_vector();
    r.weights.insert(r.weights.end(), v.begin(), v.end());
  }
  model->eval();
  NoGradGuard no_grad;
  std::vector<float> logits = model->forward(data.x).to_vector(), labels = data.y.to_vector();
  int64_t right = 0;
  for (int64_t i = 0; i < data.n; ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < 3; ++c)
      if (logits[i * 3 + c] > logits[i * 3 + best]) best = c;
    right += best == static_cast<int64_t>(labels[i]);
  }
  r.accuracy = static_cast<double>(right) / data.n;
  return r;
}

}  // namespace

TEST_CASE("an MLP trains in mxfp8 (and mxfp4 weights, bfp and :sr) twice to identical bits",
          "[blocks][train]") {
  Blobs data = blobs(240);
  Result fp32 = train_mlp(data, NumericsPolicy(), 60);
  for (auto policy :
       {policy_of({{"format", "mxfp8_e4m3"}}), policy_of({{"format", "mxfp8_e5m2"}, {"weights", "mxfp4"}}),
        policy_of({{"format", "bfp6_b8:sr"}})}) {
    Result a = train_mlp(data, policy, 60), b = train_mlp(data, policy, 60);
    INFO("accuracy " << a.accuracy << " (fp32 " << fp32.accuracy << "), loss " << a.losses.front() << " -> "
                     << a.losses.back());
    CHECK(same_bits(a.weights, b.weights));
    CHECK(same_bits(a.losses, b.losses));
    CHECK_FALSE(same_bits(a.weights, fp32.weights));  // the reads really quantize
    CHECK(a.accuracy >= 0.9);
    CHECK(a.losses.back() < a.losses.front());
  }
}
