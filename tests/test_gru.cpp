// GRU: the forward against a float64 reference of PyTorch's formulas, gradients
// by finite differences (multi-layer, bidirectional, dropout, variable lengths),
// padded sequences bit for bit against each sequence run alone, the gate
// pre-activations bit for bit against `calc --batch` dot lines, and results
// that do not depend on the thread count.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "calc/batch.h"
#include "layers/gru.h"
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

Tensor flat_results(const RecurrentOutput& r) {
  return concat({reshape(r.output, {-1}), reshape(r.h_n, {-1})}, 0);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// PyTorch's GRU for one layer and direction in float64 (bias = [b_r, b_z, b_in, b_hn]).
struct Reference {
  std::vector<double> y, h;
};
Reference reference_gru(const std::vector<float>& x, int64_t N, int64_t T, int64_t I, int64_t H,
                        const std::vector<float>& w_ih, const std::vector<float>& w_hh,
                        const std::vector<float>& b, const std::vector<int>& lengths, bool reverse) {
  Reference r;
  r.y.assign(static_cast<size_t>(N * T * H), 0.0);
  r.h.assign(static_cast<size_t>(N * H), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> h(H, 0.0);
    for (int64_t k = 0; k < lengths[n]; ++k) {
      const int64_t t = reverse ? lengths[n] - 1 - k : k;
      std::vector<double> gi(3 * H), gh(3 * H);
      for (int64_t u = 0; u < 3 * H; ++u) {
        double si = 0, sh = 0;
        for (int64_t i = 0; i < I; ++i) si += static_cast<double>(x[(n * T + t) * I + i]) * w_ih[u * I + i];
        for (int64_t j = 0; j < H; ++j) sh += h[j] * w_hh[u * H + j];
        gi[u] = si, gh[u] = sh;
      }
      std::vector<double> next(H);
      for (int64_t j = 0; j < H; ++j) {
        const double rg = sigmoid(gi[j] + gh[j] + b[j]), zg = sigmoid(gi[H + j] + gh[H + j] + b[H + j]);
        const double ng = std::tanh(gi[2 * H + j] + b[2 * H + j] + rg * (gh[2 * H + j] + b[3 * H + j]));
        next[j] = (1 - zg) * ng + zg * h[j];
        r.y[(n * T + t) * H + j] = next[j];
      }
      h = next;
    }
    for (int64_t j = 0; j < H; ++j) r.h[n * H + j] = h[j];
  }
  return r;
}

struct ThreadsGuard {
  int saved = cpu_backend().threads();
  ~ThreadsGuard() { cpu_backend().set_threads(saved); }
};

std::vector<float> calc_answers(const std::string& lines) {
  std::istringstream input(lines);
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
}

}  // namespace

TEST_CASE("GRU forward matches a float64 reference of PyTorch's formulas", "[gru]") {
  const int64_t N = 3, T = 6, I = 4, H = 5;
  auto gru = std::make_shared<GRU>(I, H, 1, true, true);
  gru->initialize(3);
  Tensor x = test::random_tensor({N, T, I}, 5, -2, 2);
  const std::vector<int> lengths = {6, 2, 4};
  RecurrentOutput out = gru->forward(x, Tensor(), Tensor::from_vector({N}, {6, 2, 4}));
  REQUIRE(out.output.shape() == Shape{N, T, 2 * H});
  REQUIRE(out.h_n.shape() == Shape{2, N, H});
  CHECK_FALSE(out.c_n.defined());
  std::vector<float> y = out.output.to_vector(), hn = out.h_n.to_vector();
  double worst = 0;
  for (int d = 0; d < 2; ++d) {
    Reference ref =
        reference_gru(x.to_vector(), N, T, I, H, gru->weight_ih(0, d).to_vector(),
                      gru->weight_hh(0, d).to_vector(), gru->bias(0, d).to_vector(), lengths, d == 1);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < H; ++j)
          worst = std::max(worst, std::fabs(y[(n * T + t) * 2 * H + d * H + j] - ref.y[(n * T + t) * H + j]));
      for (int64_t j = 0; j < H; ++j)
        worst = std::max(worst, std::fabs(hn[(d * N + n) * H + j] - ref.h[n * H + j]));
    }
  }
  CHECK(worst < 1e-5);
}

TEST_CASE("GRU gradients match finite differences in fp32", "[gru]") {
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
    auto gru = std::make_shared<GRU>(I, H, c.layers, c.bias, c.bidirectional, c.dropout);
    gru->initialize(11);
    Tensor x = test::random_tensor({N, T, I}, 12).set_requires_grad(true);
    Tensor h0 = test::random_tensor({c.layers * D, N, H}, 13, -0.5f, 0.5f).set_requires_grad(true);
    Tensor lengths = c.lengths ? Tensor::from_vector({N}, {4, 1, 2}) : Tensor();
    std::vector<Tensor> inputs = {x, h0};
    for (const Tensor& p : gru->parameters()) inputs.push_back(p);
    auto f = [&](const std::vector<Tensor>& in) { return flat_results(gru->forward(in[0], in[1], lengths)); };
    auto r = test::grad_check(f, inputs);
    INFO(r.detail);
    CHECK(r.ok);
  }
}

TEST_CASE("GRU padding: outputs exactly 0, states and gradients as each sequence alone, bit for bit",
          "[gru]") {
  const int64_t N = 4, T = 5, I = 3, H = 6, L = 2, D = 2;
  const std::vector<int64_t> lengths = {5, 2, 0, 3};
  for (const char* spec : {"fp32", "bf16"}) {
    INFO("format " << spec);
    auto gru = std::make_shared<GRU>(I, H, L, true, true);
    gru->initialize(21);
    NumericsPolicy policy;
    policy.set("format", spec);
    gru->apply_numerics(policy);
    std::vector<float> xv = test::random_tensor({N, T, I}, 22).to_vector();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t t = lengths[n]; t < T; ++t)
        for (int64_t i = 0; i < I; ++i) xv[(n * T + t) * I + i] = i == 0 ? NAN : 1e6f;
    Tensor x = Tensor::from_vector({N, T, I}, xv).set_requires_grad(true);
    Tensor h0 = test::random_tensor({L * D, N, H}, 23).set_requires_grad(true);
    Tensor gy_all = test::random_tensor({N, T, D * H}, 25), gh_all = test::random_tensor({L * D, N, H}, 26);
    RecurrentOutput out =
        gru->forward(x, h0, Tensor::from_vector({N}, std::vector<float>(lengths.begin(), lengths.end())));
    flat_results(out).backward(concat({reshape(gy_all, {-1}), reshape(gh_all, {-1})}, 0));
    const std::vector<float> y = out.output.to_vector(), hn = out.h_n.to_vector();
    const std::vector<float> gx = x.grad().to_vector(), gh0 = h0.grad().to_vector();
    for (int64_t n = 0; n < N; ++n) {
      INFO("sequence " << n << " of length " << lengths[n]);
      const int64_t len = lengths[n];
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
        std::vector<float> h0_read = state_rows(h0.to_vector());
        for (float& v : h0_read) v = quantize(parse_format(spec), v);
        CHECK(same_bits(state_rows(hn), h0_read));
        continue;
      }
      std::vector<float> x1(xv.begin() + n * T * I, xv.begin() + (n * T + len) * I);
      Tensor xa = Tensor::from_vector({1, len, I}, x1).set_requires_grad(true);
      Tensor ha = Tensor::from_vector({L * D, 1, H}, state_rows(h0.to_vector())).set_requires_grad(true);
      RecurrentOutput alone = gru->forward(xa, ha);
      std::vector<float> gy_v = gy_all.to_vector();
      std::vector<float> gya(gy_v.begin() + n * T * D * H, gy_v.begin() + (n * T + len) * D * H);
      flat_results(alone).backward(concat({Tensor::from_vector({len * D * H}, gya),
                                           Tensor::from_vector({L * D * H}, state_rows(gh_all.to_vector()))},
                                          0));
      CHECK(same_bits(std::vector<float>(y.begin() + n * T * D * H, y.begin() + (n * T + len) * D * H),
                      alone.output.to_vector()));
      CHECK(same_bits(state_rows(hn), alone.h_n.to_vector()));
      CHECK(same_bits(std::vector<float>(gx.begin() + n * T * I, gx.begin() + (n * T + len) * I),
                      xa.grad().to_vector()));
      CHECK(same_bits(state_rows(gh0), ha.grad().to_vector()));
    }
  }
}

TEST_CASE("GRU gate pre-activations equal calc --batch dot lines", "[gru]") {
  // r, z: x features, then h features, then the bias; a_nx: x features, then
  // b_in; a_nh: h features, then b_hn. mul e5m10 / acc e5m10 shows any other order.
  const int64_t N = 2, T = 3, I = 7, H = 5;
  auto gru = std::make_shared<GRU>(I, H, 1, true, true);
  gru->initialize(31);
  NumericsPolicy policy;
  policy.set("mul", "e5m10");
  policy.set("acc", "e5m10");
  policy.set("out", "fp16");
  policy.set("activations", "bf16");
  gru->apply_numerics(policy);
  gru->keep_preactivations = true;
  Tensor x = test::random_tensor({N, T, I}, 41, -3, 3);
  RecurrentOutput out = gru->forward(x);
  const Format act = parse_format("bf16");
  const std::vector<float> xv = x.to_vector(), yv = out.output.to_vector();
  std::string lines, swapped;
  std::vector<float> got;
  for (int d = 0; d < 2; ++d) {
    const std::vector<float> wi = gru->weight_ih(0, d).to_vector(), wh = gru->weight_hh(0, d).to_vector(),
                             b = gru->bias(0, d).to_vector(), pre = gru->preactivations[d].to_vector();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t prev = d == 0 ? t - 1 : t + 1;
        auto x_terms = [&](int64_t u) {
          std::string s;
          for (int64_t i = 0; i < I; ++i)
            s += " " + hex(quantize(act, xv[(n * T + t) * I + i])) + " " + hex(wi[u * I + i]);
          return s;
        };
        auto h_terms = [&](int64_t u) {
          std::string s;
          for (int64_t j = 0; j < H; ++j) {
            const float h = prev < 0 || prev >= T ? 0.0f : yv[(n * T + prev) * 2 * H + d * H + j];
            s += " " + hex(quantize(act, h)) + " " + hex(wh[u * H + j]);
          }
          return s;
        };
        for (int64_t u = 0; u < 4 * H; ++u) {
          const std::string head = "dot e5m10 e5m10 fp16 bias=" + hex(b[u]);
          if (u < 2 * H) {
            lines += head + x_terms(u) + h_terms(u) + "\n";
            swapped += head + h_terms(u) + x_terms(u) + "\n";
          } else if (u < 3 * H) {
            lines += head + x_terms(u) + "\n";
            swapped += head + x_terms(u) + "\n";
          } else {
            lines += head + h_terms(u - H) + "\n";
            swapped += head + h_terms(u - H) + "\n";
          }
          got.push_back(pre[(n * T + t) * 4 * H + u]);
        }
      }
  }
  const std::vector<float> expected = calc_answers(lines);
  REQUIRE(expected.size() == got.size());
  CHECK(same_bits(got, expected));
  CHECK_FALSE(same_bits(got, calc_answers(swapped)));
}

TEST_CASE("GRU results do not depend on the thread count", "[gru]") {
  ThreadsGuard guard;
  const int64_t N = 16, T = 3, I = 24, H = 256;
  for (const char* spec : {"fp32", "bf16"}) {
    INFO("format " << spec);
    std::vector<std::vector<float>> runs;
    for (int threads : {1, 2, 5}) {
      cpu_backend().set_threads(threads);
      auto gru = std::make_shared<GRU>(I, H, 1, true, true);
      gru->initialize(51);
      NumericsPolicy policy;
      policy.set("format", spec);
      gru->apply_numerics(policy);
      Tensor x = test::random_tensor({N, T, I}, 52).set_requires_grad(true);
      Tensor lengths =
          Tensor::from_vector({N}, std::vector<float>{3, 1, 2, 3, 3, 0, 1, 2, 3, 3, 3, 2, 1, 3, 3, 3});
      Tensor flat = flat_results(gru->forward(x, Tensor(), lengths));
      flat.backward(test::random_tensor(flat.shape(), 53));
      std::vector<float> all = flat.to_vector();
      for (const Tensor& t :
           {x.grad(), gru->weight_ih(0, 0).grad(), gru->weight_hh(0, 1).grad(), gru->bias(0, 0).grad()}) {
        std::vector<float> v = t.to_vector();
        all.insert(all.end(), v.begin(), v.end());
      }
      runs.push_back(all);
    }
    CHECK(same_bits(runs[0], runs[1]));
    CHECK(same_bits(runs[0], runs[2]));
  }
}
