// LSTM: the forward against a float64 reference of PyTorch's formulas, gradients
// by finite differences (multi-layer, bidirectional, dropout, variable lengths),
// padded sequences bit for bit against each sequence run alone, a gate
// pre-activation bit for bit against `calc --batch` dot lines, and results that
// do not depend on the thread count.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "calc/batch.h"
#include "layers/lstm.h"
#include "layers/shape_ops.h"
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

// Every result of the layer as one flat tensor: output, h_n, c_n.
Tensor flat_results(const RecurrentOutput& r) {
  return concat({reshape(r.output, {-1}), reshape(r.h_n, {-1}), reshape(r.c_n, {-1})}, 0);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// PyTorch's LSTM for one layer and direction in float64: x (N,T,I) row-major,
// weights as the layer holds them, steps beyond lengths[n] skipped (output 0).
struct Reference {
  std::vector<double> y, h, c;  // (N,T,H), (N,H), (N,H)
};
Reference reference_lstm(const std::vector<float>& x, int64_t N, int64_t T, int64_t I, int64_t H,
                         const std::vector<float>& w_ih, const std::vector<float>& w_hh,
                         const std::vector<float>& b, const std::vector<int>& lengths, bool reverse) {
  Reference r;
  r.y.assign(static_cast<size_t>(N * T * H), 0.0);
  r.h.assign(static_cast<size_t>(N * H), 0.0);
  r.c.assign(static_cast<size_t>(N * H), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> h(H, 0.0), c(H, 0.0);
    for (int64_t k = 0; k < lengths[n]; ++k) {
      const int64_t t = reverse ? lengths[n] - 1 - k : k;
      std::vector<double> a(4 * H);
      for (int64_t u = 0; u < 4 * H; ++u) {
        double s = b[u];
        for (int64_t i = 0; i < I; ++i) s += static_cast<double>(x[(n * T + t) * I + i]) * w_ih[u * I + i];
        for (int64_t j = 0; j < H; ++j) s += h[j] * w_hh[u * H + j];
        a[u] = s;
      }
      for (int64_t j = 0; j < H; ++j) {
        const double ig = sigmoid(a[j]), fg = sigmoid(a[H + j]), gg = std::tanh(a[2 * H + j]),
                     og = sigmoid(a[3 * H + j]);
        c[j] = fg * c[j] + ig * gg;
        h[j] = og * std::tanh(c[j]);
        r.y[(n * T + t) * H + j] = h[j];
      }
    }
    for (int64_t j = 0; j < H; ++j) r.h[n * H + j] = h[j], r.c[n * H + j] = c[j];
  }
  return r;
}

struct ThreadsGuard {
  int saved = cpu_backend().threads();
  ~ThreadsGuard() { cpu_backend().set_threads(saved); }
};

}  // namespace

TEST_CASE("LSTM forward matches a float64 reference of PyTorch's formulas", "[lstm]") {
  const int64_t N = 3, T = 6, I = 4, H = 5;
  auto lstm = std::make_shared<LSTM>(I, H, 1, true, true);
  lstm->initialize(3);
  Tensor x = test::random_tensor({N, T, I}, 5, -2, 2);
  const std::vector<int> lengths = {6, 2, 4};
  RecurrentOutput out = lstm->forward(x, Tensor(), Tensor(), Tensor::from_vector({N}, {6, 2, 4}));
  REQUIRE(out.output.shape() == Shape{N, T, 2 * H});
  REQUIRE(out.h_n.shape() == Shape{2, N, H});
  std::vector<float> y = out.output.to_vector(), hn = out.h_n.to_vector(), cn = out.c_n.to_vector();
  double worst = 0;
  for (int d = 0; d < 2; ++d) {
    Reference ref =
        reference_lstm(x.to_vector(), N, T, I, H, lstm->weight_ih(0, d).to_vector(),
                       lstm->weight_hh(0, d).to_vector(), lstm->bias(0, d).to_vector(), lengths, d == 1);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < H; ++j)
          worst = std::max(worst, std::fabs(y[(n * T + t) * 2 * H + d * H + j] - ref.y[(n * T + t) * H + j]));
      for (int64_t j = 0; j < H; ++j) {
        worst = std::max(worst, std::fabs(hn[(d * N + n) * H + j] - ref.h[n * H + j]));
        worst = std::max(worst, std::fabs(cn[(d * N + n) * H + j] - ref.c[n * H + j]));
      }
    }
  }
  CHECK(worst < 1e-5);
}

TEST_CASE("LSTM gradients match finite differences in fp32", "[lstm]") {
  struct Config {
    int layers;
    bool bidirectional, bias, lengths;
    float dropout;
  };
  for (const Config c : {Config{1, false, true, false, 0.0f}, Config{2, true, true, true, 0.0f},
                         Config{2, false, false, true, 0.3f}}) {
    INFO("layers " << c.layers << " bidirectional " << c.bidirectional << " bias " << c.bias << " lengths "
                   << c.lengths << " dropout " << c.dropout);
    const int64_t N = 3, T = 4, I = 3, H = 4, D = c.bidirectional ? 2 : 1;
    auto lstm = std::make_shared<LSTM>(I, H, c.layers, c.bias, c.bidirectional, c.dropout);
    lstm->initialize(11);
    Tensor x = test::random_tensor({N, T, I}, 12).set_requires_grad(true);
    Tensor h0 = test::random_tensor({c.layers * D, N, H}, 13, -0.5f, 0.5f).set_requires_grad(true);
    Tensor c0 = test::random_tensor({c.layers * D, N, H}, 14, -0.5f, 0.5f).set_requires_grad(true);
    Tensor lengths = c.lengths ? Tensor::from_vector({N}, {4, 1, 2}) : Tensor();
    std::vector<Tensor> inputs = {x, h0, c0};
    for (const Tensor& p : lstm->parameters()) inputs.push_back(p);
    auto f = [&](const std::vector<Tensor>& in) {
      return flat_results(lstm->forward(in[0], in[1], in[2], lengths));
    };
    auto r = test::grad_check(f, inputs);
    INFO(r.detail);
    CHECK(r.ok);
  }
}

TEST_CASE("LSTM padding: outputs exactly 0, states and gradients as each sequence alone, bit for bit",
          "[lstm]") {
  const int64_t N = 4, T = 5, I = 3, H = 6, L = 2, D = 2;
  const std::vector<int64_t> lengths = {5, 2, 0, 3};
  for (const char* spec : {"fp32", "bf16"}) {
    INFO("format " << spec);
    auto lstm = std::make_shared<LSTM>(I, H, L, true, true);
    lstm->initialize(21);
    NumericsPolicy policy;
    policy.set("format", spec);
    lstm->apply_numerics(policy);
    // Padding steps hold garbage, NaN included: none of it may leak.
    std::vector<float> xv = test::random_tensor({N, T, I}, 22).to_vector();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t t = lengths[n]; t < T; ++t)
        for (int64_t i = 0; i < I; ++i) xv[(n * T + t) * I + i] = i == 0 ? NAN : 1e6f;
    Tensor x = Tensor::from_vector({N, T, I}, xv).set_requires_grad(true);
    Tensor h0 = test::random_tensor({L * D, N, H}, 23).set_requires_grad(true);
    Tensor c0 = test::random_tensor({L * D, N, H}, 24).set_requires_grad(true);
    Tensor gy_all = test::random_tensor({N, T, D * H}, 25), gh_all = test::random_tensor({L * D, N, H}, 26),
           gc_all = test::random_tensor({L * D, N, H}, 27);
    RecurrentOutput out = lstm->forward(
        x, h0, c0, Tensor::from_vector({N}, std::vector<float>(lengths.begin(), lengths.end())));
    Tensor flat = flat_results(out);
    flat.backward(concat({reshape(gy_all, {-1}), reshape(gh_all, {-1}), reshape(gc_all, {-1})}, 0));
    const std::vector<float> y = out.output.to_vector(), hn = out.h_n.to_vector(), cn = out.c_n.to_vector();
    const std::vector<float> gx = x.grad().to_vector(), gh0 = h0.grad().to_vector(),
                             gc0 = c0.grad().to_vector();

    for (int64_t n = 0; n < N; ++n) {
      INFO("sequence " << n << " of length " << lengths[n]);
      const int64_t len = lengths[n];
      // The batch's slices for sequence n.
      auto state_rows = [&](const std::vector<float>& s) {
        std::vector<float> v;
        for (int64_t k = 0; k < L * D; ++k)
          v.insert(v.end(), s.begin() + (k * N + n) * H, s.begin() + (k * N + n + 1) * H);
        return v;
      };
      for (int64_t t = len; t < T; ++t)
        for (int64_t j = 0; j < D * H; ++j) REQUIRE(test::bits(y[(n * T + t) * D * H + j]) == 0u);
      for (int64_t t = len; t < T; ++t)
        for (int64_t i = 0; i < I; ++i) REQUIRE(test::bits(gx[(n * T + t) * I + i]) == 0u);
      if (len == 0) {
        // Nothing to run alone: the final states are the initial ones as read
        // (into the activations format), and their gradients pass through.
        const Format act = parse_format(spec);
        auto read = [&](std::vector<float> v) {
          for (float& e : v) e = quantize(act, e);
          return v;
        };
        CHECK(same_bits(state_rows(hn), read(state_rows(h0.to_vector()))));
        CHECK(same_bits(state_rows(cn), read(state_rows(c0.to_vector()))));
        continue;
      }
      std::vector<float> x1(xv.begin() + n * T * I, xv.begin() + (n * T + len) * I);
      Tensor xa = Tensor::from_vector({1, len, I}, x1).set_requires_grad(true);
      Tensor ha = Tensor::from_vector({L * D, 1, H}, state_rows(h0.to_vector())).set_requires_grad(true);
      Tensor ca = Tensor::from_vector({L * D, 1, H}, state_rows(c0.to_vector())).set_requires_grad(true);
      RecurrentOutput alone = lstm->forward(xa, ha, ca);
      std::vector<float> gy_v = gy_all.to_vector();
      std::vector<float> gya(gy_v.begin() + n * T * D * H, gy_v.begin() + (n * T + len) * D * H);
      Tensor flat_a = flat_results(alone);
      flat_a.backward(concat({Tensor::from_vector({len * D * H}, gya),
                              Tensor::from_vector({L * D * H}, state_rows(gh_all.to_vector())),
                              Tensor::from_vector({L * D * H}, state_rows(gc_all.to_vector()))},
                             0));
      std::vector<float> ya = alone.output.to_vector();
      CHECK(same_bits(std::vector<float>(y.begin() + n * T * D * H, y.begin() + (n * T + len) * D * H), ya));
      CHECK(same_bits(state_rows(hn), alone.h_n.to_vector()));
      CHECK(same_bits(state_rows(cn), alone.c_n.to_vector()));
      CHECK(same_bits(std::vector<float>(gx.begin() + n * T * I, gx.begin() + (n * T + len) * I),
                      xa.grad().to_vector()));
      CHECK(same_bits(state_rows(gh0), ha.grad().to_vector()));
      CHECK(same_bits(state_rows(gc0), ca.grad().to_vector()));
    }
    // A (N,T) mask gives the same bits as the lengths.
    std::vector<float> mask(static_cast<size_t>(N * T), 0.0f);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t t = 0; t < lengths[n]; ++t) mask[n * T + t] = 1.0f;
    RecurrentOutput masked = lstm->forward(x, h0, c0, Tensor::from_vector({N, T}, mask));
    CHECK(same_bits(masked.output.to_vector(), y));
    CHECK(same_bits(masked.h_n.to_vector(), hn));
  }
}

TEST_CASE("LSTM gate pre-activations equal calc --batch dot lines: x features, h features, bias", "[lstm]") {
  // mul e5m10 / acc e5m10: every term's product and sum rounded to fp16, so an
  // order other than (x, h, bias) would show. Trial 1 reads the activations
  // (x and the recurrent h) as bf16 first.
  for (int trial = 0; trial < 2; ++trial) {
    const int64_t N = 2, T = 3, I = 7, H = 5;
    auto lstm = std::make_shared<LSTM>(I, H, 1, true, true);
    lstm->initialize(31 + trial);
    NumericsPolicy policy;
    policy.set("mul", "e5m10");
    policy.set("acc", "e5m10");
    policy.set("out", "fp16");
    if (trial == 1) policy.set("activations", "bf16");
    lstm->apply_numerics(policy);
    lstm->keep_preactivations = true;
    Tensor x = test::random_tensor({N, T, I}, 40 + trial, -3, 3);
    RecurrentOutput out = lstm->forward(x);
    const Format act = parse_format(trial == 1 ? "bf16" : "fp32");
    const std::vector<float> xv = x.to_vector(), yv = out.output.to_vector();
    std::string lines, swapped;  // swapped: the hidden features first, which must give other bits somewhere
    std::vector<float> got;
    for (int d = 0; d < 2; ++d) {
      const std::vector<float> wi = lstm->weight_ih(0, d).to_vector(), wh = lstm->weight_hh(0, d).to_vector(),
                               b = lstm->bias(0, d).to_vector(), pre = lstm->preactivations[d].to_vector();
      for (int64_t t = 0; t < T; ++t)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t u = 0; u < 4 * H; ++u) {
            // h_{t-1}: this direction's output at the step processed before t (zeros at the first).
            const int64_t prev = d == 0 ? t - 1 : t + 1;
            std::string xs, hs;
            for (int64_t i = 0; i < I; ++i)
              xs += " " + hex(quantize(act, xv[(n * T + t) * I + i])) + " " + hex(wi[u * I + i]);
            for (int64_t j = 0; j < H; ++j) {
              const float h = prev < 0 || prev >= T ? 0.0f : yv[(n * T + prev) * 2 * H + d * H + j];
              hs += " " + hex(quantize(act, h)) + " " + hex(wh[u * H + j]);
            }
            lines += "dot e5m10 e5m10 fp16 bias=" + hex(b[u]) + xs + hs + "\n";
            swapped += "dot e5m10 e5m10 fp16 bias=" + hex(b[u]) + hs + xs + "\n";
            got.push_back(pre[(n * T + t) * 4 * H + u]);
          }
    }
    auto answer = [](const std::string& text) {
      std::istringstream input(text);
      std::ostringstream output;
      REQUIRE(calc::run_calc_batch(input, output, 0) == 0);
      std::istringstream answers(output.str());
      std::vector<float> values;
      for (std::string a; std::getline(answers, a);) {
        uint32_t u = static_cast<uint32_t>(std::stoul(a, nullptr, 16));
        float v;
        std::memcpy(&v, &u, 4);
        values.push_back(v);
      }
      return values;
    };
    const std::vector<float> expected = answer(lines);
    INFO("trial " << trial);
    REQUIRE(expected.size() == got.size());
    CHECK(same_bits(got, expected));
    CHECK_FALSE(same_bits(got, answer(swapped)));
  }
}

TEST_CASE("LSTM results do not depend on the thread count", "[lstm]") {
  ThreadsGuard guard;
  for (const char* spec : {"fp32", "bf16", "e5m2:sr"}) {
    INFO("format " << spec);
    // Big enough that the cell loops split (N*H > 2048 units per thread); :sr runs
    // the generic gemm (a Philox draw per rounding), so smaller.
    const bool sr = std::string(spec) == "e5m2:sr";
    const int64_t N = 16, T = sr ? 2 : 3, I = sr ? 16 : 24, H = sr ? 64 : 256;
    std::vector<std::vector<float>> runs;
    for (int threads : {1, 2, 5}) {
      cpu_backend().set_threads(threads);
      auto lstm = std::make_shared<LSTM>(I, H, 1, true, true);
      lstm->initialize(51);
      NumericsPolicy policy;
      policy.set("format", spec);
      lstm->apply_numerics(policy);
      Tensor x = test::random_tensor({N, T, I}, 52).set_requires_grad(true);
      std::vector<float> len = {3, 1, 2, 3, 3, 0, 1, 2, 3, 3, 3, 2, 1, 3, 3, 3};
      for (float& l : len) l = std::min(l, static_cast<float>(T));
      Tensor lengths = Tensor::from_vector({N}, len);
      Tensor flat = flat_results(lstm->forward(x, Tensor(), Tensor(), lengths));
      flat.backward(test::random_tensor(flat.shape(), 53));
      std::vector<float> all = flat.to_vector();
      for (const Tensor& t :
           {x.grad(), lstm->weight_ih(0, 0).grad(), lstm->weight_hh(0, 1).grad(), lstm->bias(0, 0).grad()}) {
        std::vector<float> v = t.to_vector();
        all.insert(all.end(), v.begin(), v.end());
      }
      runs.push_back(all);
    }
    CHECK(same_bits(runs[0], runs[1]));
    CHECK(same_bits(runs[0], runs[2]));
  }
}

TEST_CASE("LSTM under emulation: layer rounds only the results", "[lstm]") {
  auto lstm = std::make_shared<LSTM>(5, 6);
  lstm->initialize(61);
  Tensor x = test::random_tensor({3, 4, 5}, 62);
  const std::vector<float> plain = flat_results(lstm->forward(x)).to_vector();
  NumericsPolicy layer_level;
  layer_level.set("format", "bf16");
  layer_level.set("emulation", "layer");
  lstm->apply_numerics(layer_level);
  const std::vector<float> got = flat_results(lstm->forward(x)).to_vector();
  std::vector<float> want = plain;
  for (float& v : want) v = quantize(parse_format("bf16"), v);
  CHECK(same_bits(got, want));
  NumericsPolicy op_level;
  op_level.set("format", "bf16");
  lstm->apply_numerics(op_level);
  CHECK_FALSE(same_bits(flat_results(lstm->forward(x)).to_vector(), want));
}

TEST_CASE("LSTM rejects bad shapes and lengths with messages", "[lstm]") {
  auto lstm = std::make_shared<LSTM>(3, 4, 2);
  Tensor x = Tensor::zeros({2, 5, 3});
  CHECK_THROWS_WITH(lstm->forward(Tensor::zeros({2, 5, 4})), Catch::Contains("expected (N, T >= 1, 3)"));
  CHECK_THROWS_WITH(lstm->forward(x, Tensor::zeros({1, 2, 4})),
                    Catch::Contains("initial state of shape (1, 2, 4)"));
  CHECK_THROWS_WITH(lstm->forward(x, Tensor(), Tensor(), Tensor::from_vector({2}, {5, 6})),
                    Catch::Contains("not an integer in [0, 5]"));
  CHECK_THROWS_WITH(lstm->forward(x, Tensor(), Tensor(), Tensor::zeros({2, 4})),
                    Catch::Contains("sequence mask"));
  CHECK_THROWS(LSTM(3, 0));
  CHECK_THROWS(LSTM(3, 4, 1, true, false, 1.5f));
}
