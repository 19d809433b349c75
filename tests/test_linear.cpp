// Linear: gradients by finite differences, outputs bit for bit against
// `emutrain calc --batch` dot lines, reads really rounded, layer- vs op-level
// emulation.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <sstream>

#include "calc/batch.h"
#include "layers/linear.h"
#include "numerics/format_spec.h"
#include "numerics/round.h"
#include "tests/grad_check.h"

namespace {

using emu::Linear;
using emu::Tensor;

std::string hex(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return fmt::format("0x{:08x}", u);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("Linear gradients match finite differences in fp32", "[linear]") {
  for (bool bias : {true, false}) {
    auto layer = std::make_shared<Linear>(5, 3, bias);
    layer->initialize(7);
    Tensor x = emu::test::random_tensor({2, 4, 5}, 11).set_requires_grad(true);
    std::vector<Tensor> inputs = {x, layer->weight};
    if (bias) inputs.push_back(layer->bias);
    auto f = [&](const std::vector<Tensor>& in) {
      return emu::linear(*layer, in[0], in[1], bias ? in[2] : Tensor());
    };
    auto r = emu::test::grad_check(f, inputs);
    INFO(r.detail);
    CHECK(r.ok);
  }
}

TEST_CASE("Linear under mul e5m10 / acc e5m10 equals calc --batch dot lines", "[linear]") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t in = 1 + rng() % 40, out = 1 + rng() % 6, rows = 1 + rng() % 5;
    const bool bias = trial % 2 == 0;
    const int chunk = trial % 3 == 0 ? 0 : static_cast<int>(1 + rng() % 7);
    auto layer = std::make_shared<Linear>(in, out, bias);
    layer->initialize(100 + trial);
    emu::NumericsPolicy policy;
    policy.set("mul", "e5m10");
    policy.set("acc", "e5m10");
    policy.set("out", "fp16");
    if (chunk) {
      policy.set("chunk", std::to_string(chunk));
      policy.set("acc_outer", "fp32");
    }
    layer->apply_numerics(policy);
    Tensor x = emu::test::random_tensor({rows, in}, 200 + trial, -4, 4);
    std::vector<float> y = layer->forward(x).to_vector();

    // The same reductions as calculator lines: operands as given (the default
    // read formats are fp32), in-feature order, bias after the terms.
    std::vector<float> xv = x.to_vector(), wv = layer->weight.to_vector();
    std::vector<float> bv = bias ? layer->bias.to_vector() : std::vector<float>();
    std::string lines;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < out; ++j) {
        lines += "dot e5m10 e5m10 fp16";
        if (chunk) lines += fmt::format(" chunk={} outer=fp32", chunk);
        if (bias) lines += " bias=" + hex(bv[j]);
        for (int64_t k = 0; k < in; ++k) lines += " " + hex(xv[i * in + k]) + " " + hex(wv[j * in + k]);
        lines += "\n";
      }
    std::istringstream input(lines);
    std::ostringstream output;
    REQUIRE(emu::calc::run_calc_batch(input, output, 0) == 0);
    std::istringstream answers(output.str());
    std::vector<float> expected;
    for (std::string a; std::getline(answers, a);) {
      uint32_t u = static_cast<uint32_t>(std::stoul(a, nullptr, 16));
      float v;
      std::memcpy(&v, &u, 4);
      expected.push_back(v);
    }
    INFO("trial " << trial << " in " << in << " out " << out << " chunk " << chunk << " bias " << bias);
    CHECK(same_bits(y, expected));
  }
}

TEST_CASE("weights: fp8_e4m3 multiplies with e4m3-rounded weights", "[linear]") {
  auto layer = std::make_shared<Linear>(16, 4);
  layer->initialize(3);
  Tensor x = emu::test::random_tensor({3, 16}, 4);
  emu::NumericsPolicy e4m3;
  e4m3.set("weights", "fp8_e4m3");
  layer->apply_numerics(e4m3);
  std::vector<float> y_e4m3 = layer->forward(x).to_vector();

  // The same layer with weights rounded by hand and a plain policy.
  auto plain = std::make_shared<Linear>(16, 4);
  emu::Format f = emu::parse_format("fp8_e4m3");
  std::vector<float> w = layer->weight.to_vector(), b = layer->bias.to_vector();
  for (float& v : w) v = emu::quantize(f, v);
  for (float& v : b) v = emu::quantize(f, v);
  plain->weight.copy_from(Tensor::from_vector({4, 16}, w));
  plain->bias.copy_from(Tensor::from_vector({4}, b));
  CHECK(same_bits(y_e4m3, plain->forward(x).to_vector()));
  // ... and not what the unrounded weights give.
  layer->apply_numerics(emu::NumericsPolicy());
  CHECK_FALSE(same_bits(y_e4m3, layer->forward(x).to_vector()));
}

TEST_CASE("emulation: layer differs from op-level emulation where it must", "[linear]") {
  // bf16 has 8 significant bits: 256 + 1 + 1 ... accumulated in bf16 stays 256
  // at every step (each +1 is a tie to even), while fp32 accumulation gives
  // 256 + 8 = 264, which bf16 output rounding keeps (264 = 1.03125 * 2^8).
  auto layer = std::make_shared<Linear>(9, 1, false);
  layer->weight.copy_from(Tensor::from_vector({1, 9}, std::vector<float>(9, 1.0f)));
  Tensor x = Tensor::from_vector({1, 9}, {256, 1, 1, 1, 1, 1, 1, 1, 1});
  emu::NumericsPolicy op;
  op.set("format", "bf16");
  layer->apply_numerics(op);
  CHECK(layer->forward(x).item() == 256.0f);
  emu::NumericsPolicy layer_level = op;
  layer_level.set("emulation", "layer");
  layer->apply_numerics(layer_level);
  CHECK(layer->forward(x).item() == 264.0f);
}
