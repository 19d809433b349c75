// Approximate multipliers in the engine: the example plugin gives the built-in
// model's table, `mul: lut:...` policies and their errors, Linear and Conv2d
// outputs bit for bit against `calc --batch` dot lines and hand-ordered
// reductions, GEMM through the generic path, and a small training run.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <sstream>

#include "backends/cpu/gemm.h"
#include "calc/batch.h"
#include "core/autograd.h"
#include "core/numerics_policy.h"
#include "layers/activation.h"
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/loss.h"
#include "layers/sequential.h"
#include "numerics/approx_mul.h"
#include "numerics/format_spec.h"
#include "optim/sgd.h"
#include "tests/grad_check.h"
#include "train/recipe.h"

using namespace emu;

namespace {

std::string hex(float x) { return fmt::format("0x{:08x}", float_bits(x)); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

NumericsPolicy policy_of(std::vector<std::pair<std::string, std::string>> kv) {
  NumericsPolicy p;
  for (auto& [k, v] : kv) p.set(k, v);
  return p;
}

// R_out(sum_k R_acc(acc + table product)) in k order, written out here from
// approx_mul_value and round_value (skipping zero operands, as docs/contract.md section 4.3 says).
float reference_dot(const MacPolicy& p, const ApproxMulTable& t, const std::vector<float>& a,
                    const std::vector<float>& b, const float* bias) {
  double acc = 0.0;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] == 0.0f || b[k] == 0.0f) continue;
    acc = add_into(p.acc, acc, approx_mul_value(t, a[k], b[k]));  // R_acc of the exact sum
  }
  if (bias) acc = add_into(p.acc, acc, *bias);
  return static_cast<float>(round_value(p.out, acc));
}

}  // namespace

TEST_CASE("the example plugin loads and gives the built-in Mitchell table", "[approx_mul]") {
  load_approx_mul_plugin("plugin_mitchell", EMUTRAIN_APPROX_PLUGIN);
  load_approx_mul_plugin("plugin_mitchell", EMUTRAIN_APPROX_PLUGIN);  // again: nothing happens
  for (const char* spec : {"e5m7", "bf16", "fp8_e4m3", "e4m11:rtz"}) {
    INFO(spec);
    const Format f = parse_format(spec);
    const ApproxMulTable plugin = build_approx_table("plugin_mitchell", f);
    const ApproxMulTable builtin = build_approx_table("mitchell", f);
    REQUIRE(plugin.entries.size() == builtin.entries.size());
    CHECK(std::memcmp(plugin.entries.data(), builtin.entries.data(), plugin.entries.size() * 2) == 0);
  }
  CHECK(find_approx_mul("plugin_mitchell")(1.5f, 1.5f) == 2.0f);
  // Errors name the path, or the missing symbol.
  try {
    load_approx_mul_plugin("nowhere", "/nonexistent/libnothing.so");
    FAIL("no error");
  } catch (const ApproxMulError& e) {
    CHECK(std::string(e.what()).find("/nonexistent/libnothing.so") != std::string::npos);
  }
  try {
    load_approx_mul_plugin("no_symbol", "libm.so.6");
    FAIL("no error");
  } catch (const ApproxMulError& e) {
    CHECK(std::string(e.what()).find("does not export emutrain_approx_mul") != std::string::npos);
  }
}

TEST_CASE("mul: lut:<name>:<format> in numerics policies", "[approx_mul]") {
  NumericsPolicy p;
  p.set("format", "fp32");
  p.set("mul", "lut:mitchell:e5m7");
  LayerNumerics n = p.resolve("fc1");
  CHECK(has_approx_mul(n.mac.lut));
  CHECK(format_name(n.mac.mul) == "e5m7");
  CHECK_FALSE(n.passthrough());
  CHECK(n.describe().find("mul=lut:mitchell:e5m7") != std::string::npos);
  // An override back to a plain format drops the table.
  p.set_override("fc2", "mul", "e5m7");
  CHECK_FALSE(has_approx_mul(p.resolve("fc2").mac.lut));
  try {
    p.set("mul", "lut:bogus:e5m7");
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    CHECK(m.find("numerics.default.mul") != std::string::npos);
    CHECK(m.find("'bogus'") != std::string::npos);
    CHECK(m.find("mitchell, trunc<k>") != std::string::npos);
  }
  CHECK_THROWS_WITH(p.set("mul", "lut:mitchell:e5m13"), Catch::Contains("more than 11 fraction bits"));
}

TEST_CASE("Linear under mul lut:mitchell:e5m7 equals calc --batch dot lines", "[approx_mul]") {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 8; ++trial) {
    const int64_t in = 1 + rng() % 40, out = 1 + rng() % 6, rows = 1 + rng() % 5;
    const bool bias = trial % 2 == 0;
    const char* acc = trial % 3 == 0 ? "fp32" : "e6m9";
    auto layer = std::make_shared<Linear>(in, out, bias);
    layer->initialize(300 + trial);
    layer->apply_numerics(policy_of({{"mul", "lut:mitchell:e5m7"}, {"acc", acc}, {"out", "bf16"}}));
    Tensor x = test::random_tensor({rows, in}, 400 + trial, -4, 4);
    const std::vector<float> y = layer->forward(x).to_vector();

    const std::vector<float> xv = x.to_vector(), wv = layer->weight.to_vector();
    const std::vector<float> bv = bias ? layer->bias.to_vector() : std::vector<float>();
    std::string lines;
    std::vector<float> by_hand;
    MacPolicy p;
    set_approx_mul(p, "lut:mitchell:e5m7");
    p.acc = parse_format(acc);
    p.out = parse_format("bf16");
    const ApproxMulTable& t = cached_approx_table("mitchell", parse_format("e5m7"));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < out; ++j) {
        lines += fmt::format("dot lut:mitchell:e5m7 {} bf16", acc);
        if (bias) lines += " bias=" + hex(bv[j]);
        std::vector<float> a(xv.begin() + i * in, xv.begin() + (i + 1) * in),
            b(wv.begin() + j * in, wv.begin() + (j + 1) * in);
        for (int64_t k = 0; k < in; ++k) lines += " " + hex(a[k]) + " " + hex(b[k]);
        lines += "\n";
        by_hand.push_back(reference_dot(p, t, a, b, bias ? &bv[j] : nullptr));
      }
    std::istringstream input(lines);
    std::ostringstream output;
    REQUIRE(calc::run_calc_batch(input, output, 0) == 0);
    std::istringstream answers(output.str());
    std::vector<float> expected;
    for (std::string a; std::getline(answers, a);)
      expected.push_back(bits_float(static_cast<uint32_t>(std::stoul(a, nullptr, 16))));
    INFO("trial " << trial << " in " << in << " out " << out << " acc " << acc << " bias " << bias);
    CHECK(same_bits(y, expected));
    CHECK(same_bits(y, by_hand));
    // The table really is used: a plain e5m7 multiplier gives other bits.
    layer->apply_numerics(policy_of({{"mul", "e5m7"}, {"acc", acc}, {"out", "bf16"}}));
    if (in > 4) CHECK_FALSE(same_bits(layer->forward(x).to_vector(), y));
  }
}

TEST_CASE("GEMM with a table: the lut/fp32 and generic paths equal mac_reduce", "[approx_mul]") {
  const int64_t M = 7, N = 19, K = 33;
  std::vector<float> A = test::random_tensor({M, K}, 1, -3, 3).to_vector();
  std::vector<float> B = test::random_tensor({K, N}, 2, -3, 3).to_vector();
  // Zeros (skipped, also next to Inf and NaN), Inf, NaN, and tiny and huge operands.
  A[3] = 0.0f;
  B[3 * N + 0] = INFINITY;
  A[K + 5] = NAN;
  B[7 * N + 4] = 0.0f;
  A[2 * K + 7] = INFINITY;
  A[4 * K + 1] = 1e-6f;
  B[1 * N + 2] = -7e4f;
  for (const char* acc : {"fp32", "e6m9"}) {
    for (bool bias : {false, true}) {
      INFO("acc " << acc << " bias " << bias);
      MacPolicy p;
      set_approx_mul(p, "lut:trunc3:e4m7");
      p.acc = parse_format(acc);
      p.out = parse_format("bf16");
      const GemmPath want = std::string(acc) == "fp32" ? GemmPath::Lut : GemmPath::Generic;
      CHECK(gemm_policy_path(p) == want);
      const std::vector<float> bv = test::random_tensor({N}, 3, -1, 1).to_vector();
      std::vector<float> C(M * N), G(M * N);
      CHECK(mac_gemm_run(p, A.data(), K, B.data(), N, C.data(), N, M, N, K, bias ? bv.data() : nullptr,
                         GemmDraws{}, 3) == want);
      mac_gemm_run(p, A.data(), K, B.data(), N, G.data(), N, M, N, K, bias ? bv.data() : nullptr, GemmDraws{},
                   2, true);
      CHECK(same_bits(C, G));
      const ApproxMulTable& t = cached_approx_table("trunc3", parse_format("e4m7"));
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          std::vector<float> a(A.begin() + i * K, A.begin() + (i + 1) * K), b(K);
          for (int64_t k = 0; k < K; ++k) b[k] = B[k * N + j];
          REQUIRE(float_bits(C[i * N + j]) == float_bits(reference_dot(p, t, a, b, bias ? &bv[j] : nullptr)));
        }
    }
  }
  // A policy derived for plain sums (mul exact) ignores the table.
  MacPolicy s;
  set_approx_mul(s, "lut:trunc0:e4m7");
  s.mul_exact = true;
  CHECK(gemm_policy_path(s) != GemmPath::Lut);
  const float a[2] = {1.0f, 1.0f}, b[2] = {1.75f, 1.75f};
  CHECK(mac_reduce(s, a, b, 2, nullptr, [](uint64_t) { return 0u; }) == 3.5);  // trunc0 would give 2
}

TEST_CASE("Conv2d under mul lut:mitchell:e5m7 reduces in the canonical order with the table",
          "[approx_mul]") {
  const int64_t Ci = 3, Co = 2, H = 5, W = 6, Kh = 3, Kw = 2;
  auto conv = std::make_shared<Conv2d>(Ci, Co, Size2(static_cast<int>(Kh), static_cast<int>(Kw)));
  conv->initialize(5);
  conv->apply_numerics(policy_of({{"mul", "lut:mitchell:e5m7"}, {"acc", "e8m10"}, {"out", "fp32"}}));
  Tensor x = test::random_tensor({1, Ci, H, W}, 6, -2, 2);
  const std::vector<float> y = conv->forward(x).to_vector();
  const std::vector<float> xv = x.to_vector(), wv = conv->weight.to_vector(), bv = conv->bias.to_vector();
  MacPolicy p;
  set_approx_mul(p, "lut:mitchell:e5m7");
  p.acc = parse_format("e8m10");
  p.out = parse_format("fp32");
  const ApproxMulTable& t = cached_approx_table("mitchell", parse_format("e5m7"));
  const int64_t Ho = H - Kh + 1, Wo = W - Kw + 1;
  REQUIRE(y.size() == static_cast<size_t>(Co * Ho * Wo));
  for (int64_t co = 0; co < Co; ++co)
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox) {
        std::vector<float> a, b;  // in-channel, kernel row, kernel column
        for (int64_t ci = 0; ci < Ci; ++ci)
          for (int64_t ky = 0; ky < Kh; ++ky)
            for (int64_t kx = 0; kx < Kw; ++kx) {
              a.push_back(xv[(ci * H + oy + ky) * W + ox + kx]);
              b.push_back(wv[((co * Ci + ci) * Kh + ky) * Kw + kx]);
            }
        INFO("co " << co << " oy " << oy << " ox " << ox);
        REQUIRE(float_bits(y[(co * Ho + oy) * Wo + ox]) == float_bits(reference_dot(p, t, a, b, &bv[co])));
      }
}

TEST_CASE("an MLP trains under mul lut:mitchell:e5m7, twice to the same bits", "[approx_mul][train]") {
  // Three Gaussian blobs in 8 dimensions.
  std::mt19937_64 rng(1);
  std::normal_distribution<float> noise(0, 0.6f);
  const int64_t n = 240;
  std::vector<float> xs, ys;
  for (int64_t i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % 3);
    for (int d = 0; d < 8; ++d) xs.push_back((d % 3 == c ? 1.5f : -0.5f) + noise(rng));
    ys.push_back(static_cast<float>(c));
  }
  const Tensor X = Tensor::from_vector({n, 8}, xs), Y = Tensor::from_vector({n}, ys);
  const NumericsPolicy policy =
      policy_of({{"format", "bf16"}, {"acc", "fp32"}, {"mul", "lut:mitchell:e5m7"}});
  auto run = [&](std::vector<float>* losses) {
    auto m = std::make_shared<Sequential>();
    m->push_back(std::make_shared<Linear>(8, 32));
    m->push_back(std::make_shared<ReLU>());
    m->push_back(std::make_shared<Linear>(32, 3));
    m->initialize(42);
    m->apply_numerics(policy);
    auto loss_fn = std::make_shared<CrossEntropyLoss>();
    loss_fn->apply_numerics(policy);
    SgdOptions o;
    o.lr = 0.1f;
    o.momentum = 0.9f;
    SGD opt(m->named_parameters(), o);
    for (int s = 0; s < 60; ++s) {
      const int64_t start = (s * 24) % n;
      Tensor xb = X.narrow(0, start, 24).contiguous(), yb = Y.narrow(0, start, 24).contiguous();
      m->train();
      opt.zero_grad();
      Tensor loss = loss_fn->forward(m->forward(xb), yb);
      loss.backward();
      opt.step();
      m->context().step += 1;
      losses->push_back(loss.item());
    }
    m->eval();
    NoGradGuard no_grad;
    const std::vector<float> logits = m->forward(X).to_vector();
    int64_t right = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t best = 0;
      for (int64_t c = 1; c < 3; ++c)
        if (logits[i * 3 + c] > logits[i * 3 + best]) best = c;
      right += best == static_cast<int64_t>(ys[i]);
    }
    return static_cast<double>(right) / n;
  };
  std::vector<float> la, lb;
  const double acc_a = run(&la), acc_b = run(&lb);
  CHECK(same_bits(la, lb));
  CHECK(acc_a == acc_b);
  INFO("accuracy " << acc_a << " first loss " << la.front() << " last loss " << la.back());
  CHECK(acc_a >= 0.9);
  CHECK(la.back() < la.front());
}

TEST_CASE("recipes load plugins from numerics.approx_multipliers", "[approx_mul][recipe]") {
  const std::string base = R"(
model: {type: mlp, hidden: [16]}
data: {type: mnist, root: /nowhere, batch_size: 8}
optimizer: {type: sgd, lr: 0.1}
epochs: 1
)";
  const std::string good = base +
                           "numerics:\n  approx_multipliers: {recipe_mitchell: " + EMUTRAIN_APPROX_PLUGIN +
                           "}\n  default: {format: bf16, mul: \"lut:recipe_mitchell:e5m7\"}\n";
  const train::Recipe r = train::parse_recipe(good, "r.yaml");
  const LayerNumerics n = train::numerics_policy(r.root["numerics"]).resolve("fc1");
  CHECK(n.describe().find("mul=lut:recipe_mitchell:e5m7") != std::string::npos);
  CHECK(approx_mul_value(cached_approx_table("recipe_mitchell", parse_format("e5m7")), 1.5f, 1.5f) == 2.0);
  // A bad path names the key and the path; an unknown name lists the known ones.
  const std::string bad_path =
      base + "numerics:\n  approx_multipliers: {x: /nonexistent/libx.so}\n  default: {format: bf16}\n";
  CHECK_THROWS_WITH(
      train::parse_recipe(bad_path, "r.yaml"),
      Catch::Contains("numerics.approx_multipliers.x") && Catch::Contains("/nonexistent/libx.so"));
  const std::string bad_name = base + "numerics:\n  default: {mul: \"lut:nope:e5m7\"}\n";
  CHECK_THROWS_WITH(train::parse_recipe(bad_name, "r.yaml"),
                    Catch::Contains("numerics.default.mul") && Catch::Contains("recipe_mitchell"));
}
