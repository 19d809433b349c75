// emutrain cost (docs/cost.md): counts against closed forms written out here,
// and the energy of a LeNet-5 step against a hand computation from the
// Horowitz table. Nothing below takes a count or a price from the code under
// test to compute what it expects.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <type_traits>

#include "core/csr.h"
#include "core/numerics_policy.h"
#include "layers/gru.h"
#include "layers/lstm.h"
#include "layers/shape_ops.h"
#include "models/registry.h"
#include "optim/sgd.h"
#include "train/cost_model.h"
#include "train/cost_report.h"
#include "train/cost_step.h"
#include "train/pareto.h"

using namespace emu;
using namespace emu::train;

namespace {

std::shared_ptr<models::Model> lenet(const NumericsPolicy& policy) {
  auto m = models::make_model(YAML::Load("type: lenet5"),
                              {{"channels", 1}, {"height", 28}, {"width", 28}, {"classes", 10}});
  m->initialize(1);
  m->apply_numerics(policy);
  return m;
}

data::Batch one_image() {
  data::Batch b;
  std::vector<float> x(28 * 28);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 101.0f;
  b.tensors["x"] = Tensor::from_vector({1, 1, 28, 28}, x);
  b.tensors["y"] = Tensor::from_vector({1}, {3.0f});
  b.size = 1;
  return b;
}

StepCounts count_lenet(const NumericsPolicy& policy) {
  auto m = lenet(policy);
  SgdOptions o;
  o.lr = 0.05f;
  o.momentum = 0.9f;
  o.weight_decay = 5e-4f;
  SGD sgd(m->named_parameters(), o);
  return count_step(*m, one_image(), &sgd);
}

int64_t macs(const CostCounts& c, const std::string& layer, Phase p) {
  return c.layer_total(layer, Category::Mac, p);
}

}  // namespace

TEST_CASE("cost: LeNet-5's forward pass on one 28x28 image is 416,520 MACs", "[cost]") {
  const StepCounts s = count_lenet(NumericsPolicy());
  // Output pixels times the reduction length of each layer.
  const int64_t conv1 = (6 * 28 * 28) * (1 * 5 * 5), conv2 = (16 * 10 * 10) * (6 * 5 * 5);
  const int64_t fc1 = 120 * 400, fc2 = 84 * 120, fc3 = 10 * 84;
  REQUIRE(conv1 == 117600);
  REQUIRE(conv2 == 240000);
  REQUIRE(conv1 + conv2 + fc1 + fc2 + fc3 == 416520);
  const CostCounts& inf = s.inference;
  CHECK(macs(inf, "conv1", Phase::Forward) == 117600);
  CHECK(macs(inf, "conv2", Phase::Forward) == 240000);
  CHECK(macs(inf, "fc1", Phase::Forward) == 48000);
  CHECK(macs(inf, "fc2", Phase::Forward) == 10080);
  CHECK(macs(inf, "fc3", Phase::Forward) == 840);
  CHECK(inf.total(Category::Mac) == 416520);
  CHECK(inf.total(Category::Mac, Phase::Backward) == 0);
  // The training forward adds the loss's one product per row (the target's term).
  CHECK(s.step.total(Category::Mac, Phase::Forward) == 416520 + 1);
  CHECK(s.step.uncounted.empty());
  CHECK(inf.uncounted.empty());
}

TEST_CASE("cost: LeNet-5's backward MACs are the reductions of the op specs", "[cost]") {
  const CostCounts c = count_lenet(NumericsPolicy()).step;
  // conv2d_grad_input: every gx element reduces over Cout*KH*KW taps (off-grid ones
  // included); conv2d_grad_weight: every gw element over N*OH*OW; conv1's input
  // needs no gradient. Linear: grad-input rows*out*in, grad-weight out*in*rows.
  CHECK(macs(c, "conv1", Phase::Backward) == (6 * 1 * 5 * 5) * (28 * 28));
  CHECK(macs(c, "conv2", Phase::Backward) == (6 * 14 * 14) * (16 * 5 * 5) + (16 * 6 * 5 * 5) * (10 * 10));
  CHECK(macs(c, "fc1", Phase::Backward) == 400 * 120 + 120 * 400);
  CHECK(macs(c, "fc2", Phase::Backward) == 120 * 84 + 84 * 120);
  CHECK(macs(c, "fc3", Phase::Backward) == 84 * 10 + 10 * 84);
  // Bias gradients are plain sums: channel_sum over N*OH*OW per channel, Linear's over the rows.
  CHECK(c.layer_total("conv1", Category::Add, Phase::Backward) == 6 * 28 * 28);
  CHECK(c.layer_total("conv2", Category::Add, Phase::Backward) == 16 * 10 * 10);
  CHECK(c.layer_total("fc1", Category::Add, Phase::Backward) == 120);
  // Max-pool backward: one term per (output, window tap) inside the input.
  CHECK(c.layer_total("pool1", Category::Add, Phase::Backward) == 6 * 28 * 28);
  CHECK(c.layer_total("pool2", Category::Add, Phase::Backward) == 16 * 10 * 10);
}

TEST_CASE("cost: a 2:4 mask halves the weight products it covers", "[cost]") {
  NumericsPolicy p;
  p.set("sparsity", "2:4");
  const StepCounts s = count_lenet(p);
  const CostCounts& inf = s.inference;
  // Linear rows of 400, 120 and 84 inputs are whole groups of 4: exactly half.
  CHECK(macs(inf, "fc1", Phase::Forward) == 48000 / 2);
  CHECK(macs(inf, "fc2", Phase::Forward) == 10080 / 2);
  CHECK(macs(inf, "fc3", Phase::Forward) == 840 / 2);
  // Conv rows of 25 and 150 taps end in a short group (1 and 2 taps) that keeps all:
  // 6 * 2 + 1 = 13 of 25, 37 * 2 + 2 = 76 of 150 per output channel.
  CHECK(macs(inf, "conv1", Phase::Forward) == (6 * 28 * 28) * 13);
  CHECK(macs(inf, "conv2", Phase::Forward) == (16 * 10 * 10) * 76);
  CHECK(inf.layer_total("fc1", Category::MacMasked, Phase::Forward) == 48000 / 2);
  // The grad-input reads the masked weights too; the grad-weight does not.
  const CostCounts& c = s.step;
  CHECK(macs(c, "fc1", Phase::Backward) == 48000 / 2 + 48000);
  // conv2's grad-input: each of the 16 * 74 dropped weights meets every one of the
  // 14 * 14 input pixels of its input channel once.
  CHECK(macs(c, "conv2", Phase::Backward) ==
        (6 * 14 * 14) * (16 * 25) - (16 * 74) * (14 * 14) + (16 * 150) * (10 * 10));
  // Metadata: ceil(log2 4) = 2 bits per kept weight, at each of the forward and backward reads.
  CHECK(inf.layer_total("fc1", Category::Meta, Phase::Forward) == 2 * (120 * 200));
}

TEST_CASE("cost: the fp32 LeNet-5 step energy is the hand computation from the Horowitz table", "[cost]") {
  const StepCounts s = count_lenet(NumericsPolicy());
  // Parameters: conv1 6*25+6, conv2 16*150+16, fc1 120*400+120, fc2 84*120+84, fc3 10*84+10.
  const int64_t P = 156 + 2416 + 48120 + 10164 + 850;
  REQUIRE(P == 61706);
  // MACs: the forward layers, the loss's target term, the backward reductions (above).
  const int64_t mac = 416520 + 1 + 117600 + (470400 + 240000) + 96000 + 20160 + 1680;
  // Plain-sum additions: forward biases, the log-softmax sum and the loss total,
  // the Linear bias gradients, both max-pool backward sums, both channel sums.
  const int64_t sums =
      (4704 + 1600 + 120 + 84 + 10) + (10 + 1) + (10 + 84 + 120) + (1600 + 4704) + (1600 + 4704);
  // Comparisons: relu forward, max-pool windows (k-1 per window), the log-softmax max, relu backward.
  const int64_t cmps = (4704 + 1600 + 120 + 84) + (4704 - 1176) + (1600 - 400) + 9 + (84 + 120 + 1600 + 4704);
  // Element-wise additions: log-softmax's subtractions (2 x 10), the loss gradient's
  // exp - q (10); SGD's first step per parameter g + wd*p and p - lr*d.
  const int64_t adds = 20 + 10 + 2 * P;
  // Products: the loss gradient's (10); SGD's wd*p and lr*d. Quotients: the loss mean and w / count.
  const int64_t muls = 10 + 2 * P, divs = 2;
  // Functions: exp of 10 logits and log of the sum forward, exp of 10 log-probabilities backward.
  const int64_t fns = 10 + 1 + 10;
  // Bits: every operand element read and every result written as fp32 (32 bits each);
  // SGD reads p, g and the momentum buffer and writes p and the buffer.
  const int64_t reads = (784 + 150 + 6) + 4704 + 4704 + (1176 + 2400 + 16) + 1600 + 1600 +
                        (400 + 48000 + 120) + 120 + (120 + 10080 + 84) + 84 + (84 + 840 + 10) +
                        10 +  // forward
                        10 + (10 + 840) + (10 + 84) + 10 + 168 + (84 + 10080) + (84 + 120) + 84 + 240 +
                        (120 + 48000) + (120 + 400) + 120 + 400 + 3200 + (1600 + 2400) + (1176 + 1600) +
                        1600 + 1176 + 9408 + (784 + 4704) + 4704 +  // backward
                        3 * P;                                      // update
  const int64_t writes = (4704 + 4704 + 1176 + 1600 + 1600 + 400 + 120 + 120 + 84 + 84 + 10 + 10) +
                         (10 + 84 + 840 + 10 + 84 + 120 + 10080 + 84 + 120 + 400 + 48000 + 120 + 1600 + 1600 +
                          1176 + 2400 + 16 + 4704 + 4704 + 150 + 6) +
                         2 * P;
  const CostCounts& c = s.step;
  CHECK(c.total(Category::Mac) == mac);
  CHECK(c.total(Category::Add) == sums);
  CHECK(c.total(Category::Op) == cmps + adds + muls + divs);
  CHECK(c.total(Category::Function) == fns);
  CHECK(c.total(Category::Read) == 32 * reads);
  CHECK(c.total(Category::Write) == 32 * writes);
  // Horowitz, ISSCC 2014, 45 nm: fp32 add 0.9 pJ, fp32 multiply 3.7 pJ, a 64-bit
  // read of a 32 KB SRAM 20 pJ. A MAC is a multiply and an add; a comparison an add;
  // a quotient one multiply; an exact function 5 multiplies and 5 adds (the rules).
  const double expected = mac * (3.7 + 0.9) + (sums + cmps + adds) * 0.9 + (muls + divs) * 3.7 +
                          fns * (5 * 3.7 + 5 * 0.9) + (reads + writes) * 32 * (20.0 / 64.0);
  const Priced p = price(default_cost_model(), c);
  CHECK(p.total() == Approx(expected).epsilon(1e-12));
  CHECK(expected == Approx(12567283.8).epsilon(1e-12));  // 12.567 uJ, the figure of docs/cost.md
}

TEST_CASE("cost: GCN counts follow the graph's stored entries", "[cost]") {
  // 4 nodes on a path 0-1-2-3 (6 directed edges), 3 sparse features, 2 classes, 2 hidden.
  const CsrMatrix adj = csr_from_coo(4, 4, {0, 1, 1, 2, 2, 3}, {1, 0, 2, 1, 3, 2}, {1, 1, 1, 1, 1, 1});
  const CsrMatrix x = csr_from_coo(4, 3, {0, 1, 2, 3, 3}, {0, 1, 2, 0, 2}, {1, 1, 1, 1, 1});
  data::Batch b;
  b.sparse["adj"] = std::make_shared<const CsrMatrix>(adj);
  b.sparse["x"] = std::make_shared<const CsrMatrix>(x);
  b.tensors["y"] = Tensor::from_vector({4}, {0, 1, 0, 1});
  b.tensors["train_mask"] = Tensor::from_vector({4}, {1, 1, 0, 1});
  b.tensors["test_mask"] = Tensor::from_vector({4}, {0, 0, 1, 0});
  b.size = 1;
  auto m = models::make_model(YAML::Load("{type: gcn, hidden: 2, dropout: 0, input_dropout: 0}"),
                              {{"features", 3}, {"classes", 2}});
  m->initialize(0);
  m->apply_numerics(NumericsPolicy());
  const StepCounts s = count_step(*m, b, nullptr);
  const int64_t nnz_x = 5, nnz_a = 6 + 4;  // gcn_normalize adds the 4 self-loops
  // conv1: x W^T over x's stored entries (nnz_x * hidden), then Â h (nnz_a * hidden).
  CHECK(macs(s.step, "conv1", Phase::Forward) == nnz_x * 2 + nnz_a * 2);
  // conv2: dense h (4 x 2) times W^T (2 x 2), then Â (nnz_a * classes).
  CHECK(macs(s.step, "conv2", Phase::Forward) == 4 * 2 * 2 + nnz_a * 2);
  // Backward: conv2 grad-input and grad-weight of the transform and Â^T g;
  // conv1 Â^T g and x^T g for the weight (the sparse input has no gradient).
  CHECK(macs(s.step, "conv2", Phase::Backward) == nnz_a * 2 + 4 * 2 * 2 + 2 * 2 * 4);
  CHECK(macs(s.step, "conv1", Phase::Backward) == nnz_a * 2 + nnz_x * 2);
  CHECK(s.step.uncounted.empty());
}

TEST_CASE("cost model: the table's formats cost what the table says; others follow the rules", "[cost]") {
  const CostModel m = default_cost_model();
  CHECK(mac_cost(m, "fp32", "fp32", "fp32", "exact").pj == Approx(3.7 + 0.9));
  CHECK(mac_cost(m, "fp16", "fp16", "fp16", "exact").pj == Approx(1.1 + 0.4));
  CHECK(mul_cost(m, "int8", "int8").pj == Approx(0.2));
  CHECK(add_cost(m, "fixed32_16").pj == Approx(0.1));
  // Fixed point is integer arithmetic of its width: a 16-bit product scales the
  // 8-bit one by (16/8)^2; a 16-bit add is the table's 0.05 pJ.
  CHECK(mac_cost(m, "fixed16_8", "fixed16_8", "fixed16_8", "exact").pj == Approx(0.2 * 4 + 0.05));
  CHECK(mac_cost(m, "fixed8_4", "fixed8_4", "fixed8_4", "exact").pj == Approx(0.2 + 0.03));
  // A 12-bit adder interpolates linearly between 8 and 16 bits.
  CHECK(add_cost(m, "fixed12_4").pj == Approx(0.04));
  // bf16 (8 significand bits, 8 exponent bits) from the fp16 entry (11, 5): the
  // significand part (entry less a 5-bit exponent add, 0.03 * 5/8 below the
  // smallest width) times (8/11)^2 for the product, 8/11 for the sum, plus an 8-bit add.
  const double add5 = 0.03 * 5 / 8;
  CHECK(mul_cost(m, "bf16", "bf16").pj == Approx((1.1 - add5) * 64.0 / 121.0 + 0.03));
  CHECK(add_cost(m, "bf16").pj == Approx((0.4 - add5) * 8.0 / 11.0 + 0.03));
  // e5m2: 3 significand bits, 5 exponent bits.
  CHECK(mul_cost(m, "e5m2", "e5m2").pj == Approx((1.1 - add5) * 9.0 / 121.0 + add5));
  // An approximate multiplier costs approx_mul_factor of the exact one of its format.
  CHECK(mac_cost(m, "bf16", "bf16", "fp32", "lut:mitchell:bf16").pj ==
        Approx(0.5 * mul_cost(m, "bf16", "bf16").pj + 0.9));
  // Memory: 20 pJ per 64-bit access of a 32 KB SRAM.
  CHECK(bit_cost(m) == Approx(20.0 / 64.0));
}

TEST_CASE("cost model: a user's table replaces the default; errors name the file and the key", "[cost]") {
  const std::string base =
      "integer: {add: {8: {pj: 1}}, mul: {8: {pj: 2}}}\n"
      "float: {add: {fp32: {pj: 3}}, mul: {fp32: {pj: 4}}}\n"
      "memory: {sram: 64}\noperands: sram\n";
  const CostModel m = parse_cost_model(base, "mine.yaml");
  CHECK(mac_cost(m, "int8", "int8", "int8", "exact").pj == Approx(3.0));
  CHECK(bit_cost(m) == Approx(1.0));
  auto error_of = [](const std::string& text) {
    try {
      parse_cost_model(text, "mine.yaml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of(base + "rules: {div_mul: 2}\n") ==
        "cost model mine.yaml: rules.div_mul: unknown key (allowed: posit_decode_adds, posit_encode_adds, "
        "function_exact, approx_mul_factor, div_muls, sqrt_muls)");
  CHECK(error_of("integer: {add: {8: {pj: x}}, mul: {8: {pj: 2}}}\n") ==
        "cost model mine.yaml: integer.add.8.pj: 'x' is not a number");
  CHECK(error_of(base.substr(0, base.find("operands")) + "operands: dram\n")
            .find("operands: 'dram' is not a level of memory (levels: sram)") != std::string::npos);
  CHECK(error_of(
            "integer: {add: {8: {pj: 1}}, mul: {8: {pj: 2}}}\nfloat: {add: {posit16_1: {pj: 1}}, mul: {}}\n")
            .find("float.add.posit16_1: an IEEE-like format") != std::string::npos);
  try {
    load_cost_model("/nonexistent/table.yaml");
    FAIL("no error");
  } catch (const std::exception& e) {
    CHECK(std::string(e.what()) == "cost model /nonexistent/table.yaml: cannot read the file");
  }
}

TEST_CASE("cost: JSON, CSV and the sweep columns agree with the counts", "[cost]") {
  const StepCounts s = count_lenet(NumericsPolicy());
  const CostModel m = default_cost_model();
  const std::string csv = cost_csv(s, m);
  CHECK(csv.rfind("pass,layer,phase,category,a,b,c,mode,count,pj\n", 0) == 0);
  CHECK(csv.find("inference,fc1,forward,mac,fp32,fp32,fp32,fp32,48000,220800\n") != std::string::npos);
  const CostColumns col = cost_columns(s, m);
  CHECK(col.step_macs == 1362361);
  CHECK(col.step_pj == Approx(12567283.8).epsilon(1e-12));
  CHECK(col.step_mac_pj == Approx(1362361 * 4.6).epsilon(1e-12));
  CHECK(cost_column_values(std::nullopt) == std::vector<std::string>(7));
  // One fp32 multiplier and one fp32 adder (Horowitz: 7700 + 4184 um^2) do every MAC.
  CHECK(col.mac_area_um2 == Approx(7700 + 4184));
}

TEST_CASE("pareto front: the points no other beats in both cost and quality", "[cost]") {
  // (cost, quality): 1 is dominated by 0 (dearer, not better), 3 by 2, 5 ties 4's
  // cost with lower quality; the NaN point is left out.
  const std::vector<ParetoPoint> pts = {
      {1, 80}, {2, 80}, {3, 82}, {4, 81}, {5, 86}, {5, 84}, {0.5, std::nan("")}};
  CHECK(pareto_front(pts) == std::vector<size_t>{0, 2, 4});
  CHECK(pareto_front({}).empty());
}

namespace {

// A recurrent layer whose (N*T, H) outputs are the logits: enough to count one
// layer's forward and backward (docs/layers_recurrent.md).
template <class Rnn>
class TinyRecurrent : public models::Model {
 public:
  TinyRecurrent() { rnn = register_module("rnn", std::make_shared<Rnn>(4, 5)); }
  models::Prediction predict(const data::Batch& b, const std::string&) override {
    Tensor y;  // (N, T, H)
    if constexpr (std::is_same_v<Rnn, LSTM>)
      y = rnn->forward(b.at("x"), Tensor(), Tensor(), b.at("lengths")).output;
    else
      y = rnn->forward(b.at("x"), Tensor(), b.at("lengths")).output;
    return {reshape(y, {y.dim(0) * y.dim(1), y.dim(2)}), b.at("y")};
  }
  std::shared_ptr<Rnn> rnn;
};

// 2 sequences of lengths 3 and 2 (T = 3): 5 valid steps.
data::Batch sequences() {
  data::Batch b;
  std::vector<float> x(2 * 3 * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) / 7.0f - 0.4f;
  b.tensors["x"] = Tensor::from_vector({2, 3, 4}, x);
  b.tensors["lengths"] = Tensor::from_vector({2}, {3, 2});
  b.tensors["y"] = Tensor::from_vector({6}, {0, 1, 2, 3, 4, -1});
  b.size = 2;
  return b;
}

}  // namespace

TEST_CASE("cost: LSTM and GRU count their valid steps' reductions", "[cost]") {
  const int64_t V = 5, I = 4, H = 5;
  {
    TinyRecurrent<LSTM> m;
    m.initialize(0);
    m.apply_numerics(NumericsPolicy());
    const StepCounts s = count_step(m, sequences(), nullptr);
    CHECK(s.step.uncounted.empty());
    // Forward: per valid step 4H gate reductions over I + H terms; 3H sigmoids, 2H tanhs.
    CHECK(macs(s.step, "rnn", Phase::Forward) == V * 4 * H * (I + H));
    CHECK(s.step.sum([](const CountKey& k) {
      return k.layer == "rnn" && k.category == Category::Function && k.mode == "sigmoid";
    }) == V * 3 * H);
    // Backward: dh_{t-1} over 4H gate units per valid step; dw_ih and dw_hh one term
    // per valid row (the input needs no gradient: no dx).
    CHECK(macs(s.step, "rnn", Phase::Backward) == V * H * 4 * H + 4 * H * I * V + 4 * H * H * V);
    // The op has one bias (4H; the layer hands its gradient to b_ih and b_hh): a sum over the valid rows.
    CHECK(s.step.layer_total("rnn", Category::Add, Phase::Backward) == 4 * H * V);
  }
  {
    TinyRecurrent<GRU> m;
    m.initialize(0);
    m.apply_numerics(NumericsPolicy());
    const StepCounts s = count_step(m, sequences(), nullptr);
    CHECK(s.step.uncounted.empty());
    CHECK(macs(s.step, "rnn", Phase::Forward) == V * 3 * H * (I + H));
    CHECK(macs(s.step, "rnn", Phase::Backward) == V * H * 3 * H + 3 * H * I * V + 3 * H * H * V);
  }
}

TEST_CASE("cost: the transformer recipe's model counts every op", "[cost]") {
  // The FordA transformer (recipes/transformer_forda.yaml) at a small size: layer
  // norm, attention products and softmax, GELU-free Conv1d feed-forward, pooling.
  auto m = models::make_model(
      YAML::Load("{type: transformer, num_blocks: 1, head_size: 4, num_heads: 2, ff_dim: 4, "
                 "dropout: 0.1, mlp_units: [8], mlp_dropout: 0.1}"),
      {{"channels", 1}, {"length", 6}, {"classes", 2}});
  m->initialize(0);
  m->apply_numerics(NumericsPolicy());
  data::Batch b;
  std::vector<float> x(2 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) / 6.0f - 1.0f;
  b.tensors["x"] = Tensor::from_vector({2, 6, 1}, x);
  b.tensors["y"] = Tensor::from_vector({2}, {0, 1});
  b.size = 2;
  const StepCounts s = count_step(*m, b, nullptr);
  CHECK(s.step.uncounted.empty());
  CHECK(s.inference.uncounted.empty());
  // Unmasked attention: the softmax takes every one of the N * heads * T * T positions;
  // scores and context are N * heads * T * T * head_size MACs each, forward.
  CHECK(s.step.sum([](const CountKey& k) {
    return k.category == Category::Function && k.mode == "exp" && k.phase == Phase::Forward &&
           k.layer == "block0.self_attn";
  }) == 2 * 2 * 6 * 6);
  CHECK(s.step.sum([](const CountKey& k) { return k.layer == "(unattributed)"; }) == 0);
  CHECK(s.inference.layer_total("block0.self_attn", Category::Mac, Phase::Forward) ==
        2 * (2 * 2 * 6 * 6 * 4));
}

TEST_CASE("cost: approximate multipliers by table, block formats' scales as metadata", "[cost]") {
  {
    NumericsPolicy p;
    p.set("format", "bf16");
    p.set("mul", "lut:mitchell:bf16");
    const StepCounts s = count_lenet(p);
    // Every fc1 forward product goes through the Mitchell table of bf16.
    const int64_t lut = s.inference.sum([](const CountKey& k) {
      return k.layer == "fc1" && k.category == Category::Mac && k.mode == "lut:mitchell:bf16";
    });
    CHECK(lut == 48000);
    // Priced as approx_mul_factor (0.5) of an exact bf16 multiplier plus a bf16 add.
    const CostModel m = default_cost_model();
    const double add5 = 0.03 * 5 / 8;
    const double mul_bf16 = (1.1 - add5) * 64.0 / 121.0 + 0.03, add_bf16 = (0.4 - add5) * 8.0 / 11.0 + 0.03;
    CHECK(entry_pj(
              m, CountKey{"fc1", Phase::Forward, Category::Mac, "bf16", "bf16", "bf16", "lut:mitchell:bf16"},
              48000) == Approx(48000 * (0.5 * mul_bf16 + add_bf16)));
  }
  {
    NumericsPolicy p;
    p.set("format", "mxfp8_e4m3");
    const StepCounts s = count_lenet(p);
    // Blocks of 32 along the reduction rows, one 8-bit E8M0 scale each, read once in
    // the inference pass: fc1's weights (120 rows of 400: ceil(400/32) = 13 each), its
    // input (1 row of 400: 13) and its bias (120 values along the last dim: 4).
    CHECK(s.inference.sum([](const CountKey& k) {
      return k.layer == "fc1" && k.category == Category::Meta && k.mode == "block_scale";
    }) == (120 * 13 + 13 + 4) * 8);
    // Element bits: 8 per weight element.
    CHECK(s.inference.sum([](const CountKey& k) {
      return k.layer == "fc1" && k.category == Category::Read && k.mode == "weights";
    }) == 8 * (120 * 400 + 120));
  }
}

TEST_CASE("cost: split products count their unit multiplies by scheme", "[cost]") {
  const CostModel m = default_cost_model();
  // bf16 multiplier from the fp16 entry by the square law (as in the lut case above).
  const double add5 = 0.03 * 5 / 8;
  const double mul_bf16 = (1.1 - add5) * 64.0 / 121.0 + 0.03;
  // docs/contract.md section 5.6: fp32b adds six bf16 products into the fp32
  // accumulator (0.9 pJ each); int16 forms the exact product from four int8
  // products (0.2 pJ) with three int32 additions (0.1 pJ) and adds it once.
  const std::vector<std::pair<std::string, double>> schemes = {{"split:fp32b", 6 * mul_bf16 + 6 * 0.9},
                                                               {"split:int16", 4 * 0.2 + 3 * 0.1 + 0.9}};
  for (const auto& [scheme, per_mac] : schemes) {
    INFO(scheme);
    NumericsPolicy p;
    p.set("mul", scheme);
    const StepCounts s = count_lenet(p);
    const std::string mode = scheme;
    // The same 48,000 fc1 products, each a split product.
    CHECK(s.inference.sum([&](const CountKey& k) {
      return k.layer == "fc1" && k.category == Category::Mac && k.mode == mode;
    }) == 48000);
    CHECK(s.inference.total(Category::Mac) == 416520);
    CHECK(entry_pj(m, CountKey{"fc1", Phase::Forward, Category::Mac, "fp32", "fp32", "fp32", scheme}, 1000) ==
          Approx(1000 * per_mac));
  }
  CHECK(split_cost_shape("split:fp32f").unit_muls == 3);
  CHECK(split_cost_shape("split:fp32f").unit == "fp16");
  CHECK(split_cost_shape("split:fp32t").unit == "tf32");
  CHECK_THROWS_WITH(split_cost_shape("split:fp64q"), Catch::Contains("unknown split scheme 'split:fp64q'"));
}
