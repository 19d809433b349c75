// Conv1d (layers/conv1d.h: the Conv2d ops of backends/cpu/conv_ops.cpp on (N, C, 1, L)):
//  - finite-difference gradients in plain fp32 (stride, padding, dilation, groups, bias);
//  - an output element equals, bit for bit, `emutrain calc --batch` dot lines of the same operands
//    in canonical order under mul e5m10 / acc e5m10;
//  - forward, grad-input, grad-weight and grad-bias under emulated formats equal mac_reduce over
//    operands laid out here in the canonical orders (chunks, bias, accumulator-only formats, :sr draws);
//  - with dilation 1 the bits of Conv2d on (N, C, 1, L) with a 1 x KL kernel;
//  - results independent of the thread count and the packing blocks;
//  - plain fp32 against a float64 reference (shapes and values, dilation / stride / padding).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "calc/batch.h"
#include "core/autograd.h"
#include "layers/conv1d.h"
#include "layers/conv2d.h"
#include "layers/layer_io.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/grad_check.h"
#include "tests/test_util.h"

using namespace emu;
using emu::test::mismatch;
using emu::test::policy;

namespace {

// Values over 6 binades around 1, 10% zeros and one -0 (test_util.h rich_tensor).
Tensor rich_tensor(const Shape& shape, uint64_t seed, double zero_fraction = 0.1) {
  return test::rich_tensor(shape, seed, {zero_fraction, 6, -3, true});
}

struct Case {
  int64_t N, C_in, L, C_out;
  int KL, stride, pad, dil, groups;
  bool bias;
  Conv2dParams params() const { return conv1d_params(stride, pad, dil, groups); }
  int64_t OL() const { return (L + 2 * pad - dil * (KL - 1) - 1) / stride + 1; }
  int64_t Cig() const { return C_in / groups; }
  int64_t Cog() const { return C_out / groups; }
  std::string name() const {
    return fmt::format("x ({},{},{}) C_out {} k {} s {} p {} d {} g {}{}", N, C_in, L, C_out, KL, stride, pad,
                       dil, groups, bias ? " bias" : "");
  }
};

const Case kCases[] = {
    {2, 3, 9, 4, 3, 1, 1, 1, 1, true},    // same-size
    {2, 4, 11, 6, 3, 2, 2, 2, 2, true},   // strided, dilated, two groups
    {3, 4, 10, 4, 2, 1, 0, 3, 4, false},  // depthwise, dilation 3
    {2, 6, 7, 3, 1, 2, 0, 1, 3, true},    // 1-tap, stride 2, groups 3
    {1, 2, 5, 2, 4, 3, 3, 2, 1, true},    // padding larger than the input's overhang
};

struct Operands {
  Tensor x, w, b;
};

Operands operands(const Case& c, uint64_t seed) {
  Operands o;
  o.x = rich_tensor({c.N, c.C_in, c.L}, seed);
  o.w = rich_tensor({c.C_out, c.Cig(), c.KL}, seed + 1);
  if (c.bias) o.b = rich_tensor({c.C_out}, seed + 2, 0.0);
  return o;
}

std::shared_ptr<Conv1d> make_conv(const Case& c, const NumericsPolicy& p, const Operands& o) {
  auto m = std::make_shared<Conv1d>(c.C_in, c.C_out, c.KL, c.stride, c.pad, c.dil, c.groups, c.bias);
  m->apply_numerics(p);
  m->weight.copy_from(o.w);
  if (c.bias) m->bias.copy_from(o.b);
  return m;
}

struct Run {
  std::vector<float> y, gx, gw, gb;
};

Run run_layer(Conv1d& m, const Tensor& x_values, const Tensor& gy) {
  Tensor x = x_values.clone();
  x.set_requires_grad(true);
  m.zero_grad();
  Tensor y = m.forward(x);
  y.backward(gy);
  Run r;
  r.y = y.to_vector();
  r.gx = x.grad().to_vector();
  r.gw = m.weight.grad().to_vector();
  if (m.bias.defined()) r.gb = m.bias.grad().to_vector();
  return r;
}

// mac_reduce of output o over the operand pairs (a, b) in the order given; :sr draws at
// o * mac_site_count(K, chunk) + site of `key`.
float reduce(const MacPolicy& p, const std::vector<float>& a, const std::vector<float>& b, const float* bias,
             DrawKey key, uint64_t o) {
  const uint64_t base = o * mac_site_count(static_cast<int64_t>(a.size()), p.chunk);
  auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream, base + site); };
  return static_cast<float>(mac_reduce(p, a.data(), b.data(), static_cast<int64_t>(a.size()), bias, draw));
}

// The operand pairs of forward output (n, co, ol) in canonical order (ci of the group, k); padding
// positions are zero operands. x and w as read.
void forward_terms(const Case& c, const std::vector<float>& x, const std::vector<float>& w, int64_t n,
                   int64_t co, int64_t ol, std::vector<float>* a, std::vector<float>* b) {
  a->clear(), b->clear();
  const int64_t grp = co / c.Cog();
  for (int64_t ci = 0; ci < c.Cig(); ++ci)
    for (int64_t k = 0; k < c.KL; ++k) {
      const int64_t l = ol * c.stride - c.pad + k * c.dil;
      a->push_back(l >= 0 && l < c.L ? x[(n * c.C_in + grp * c.Cig() + ci) * c.L + l] : 0.0f);
      b->push_back(w[(co * c.Cig() + ci) * c.KL + k]);
    }
}

std::vector<float> quantized(const Format& f, std::vector<float> v) {
  for (float& x : v) x = quantize(f, x);
  return v;
}

std::vector<float> literal_forward(const Case& c, const LayerNumerics& nm, const Operands& o, DrawKey key) {
  const std::vector<float> x = quantized(nm.activations, o.x.to_vector()),
                           w = quantized(nm.weights, o.w.to_vector());
  const std::vector<float> b = c.bias ? quantized(nm.weights, o.b.to_vector()) : std::vector<float>();
  std::vector<float> y, ta, tb;
  uint64_t out = 0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t co = 0; co < c.C_out; ++co)
      for (int64_t ol = 0; ol < c.OL(); ++ol) {
        forward_terms(c, x, w, n, co, ol, &ta, &tb);
        y.push_back(reduce(nm.mac, ta, tb, c.bias ? &b[co] : nullptr, key, out++));
      }
  return y;
}

// gx[n][ci][l] over (co of the group, k): gy at the output whose tap k reads l, or a zero operand.
std::vector<float> literal_grad_input(const Case& c, const LayerNumerics& nm, const std::vector<float>& gq,
                                      const Operands& o, DrawKey key) {
  const std::vector<float> w = quantized(nm.weights, o.w.to_vector());
  const MacPolicy p = backward_mac(nm);
  std::vector<float> gx;
  uint64_t out = 0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t ci = 0; ci < c.C_in; ++ci)
      for (int64_t l = 0; l < c.L; ++l) {
        std::vector<float> a, b;
        const int64_t grp = ci / c.Cig(), cl = ci % c.Cig();
        for (int64_t co = grp * c.Cog(); co < (grp + 1) * c.Cog(); ++co)
          for (int64_t k = 0; k < c.KL; ++k) {
            const int64_t t = l + c.pad - k * c.dil;
            const bool hit = t >= 0 && t % c.stride == 0 && t / c.stride < c.OL();
            a.push_back(hit ? gq[(n * c.C_out + co) * c.OL() + t / c.stride] : 0.0f);
            b.push_back(w[(co * c.Cig() + cl) * c.KL + k]);
          }
        gx.push_back(reduce(p, a, b, nullptr, key, out++));
      }
  return gx;
}

// gw[co][ci][k] over (n, ol).
std::vector<float> literal_grad_weight(const Case& c, const LayerNumerics& nm, const std::vector<float>& gq,
                                       const Operands& o, DrawKey key) {
  const std::vector<float> x = quantized(nm.activations, o.x.to_vector());
  const MacPolicy p = backward_mac(nm);
  std::vector<float> gw;
  uint64_t out = 0;
  for (int64_t co = 0; co < c.C_out; ++co)
    for (int64_t cl = 0; cl < c.Cig(); ++cl)
      for (int64_t k = 0; k < c.KL; ++k) {
        std::vector<float> a, b;
        const int64_t ci = co / c.Cog() * c.Cig() + cl;
        for (int64_t n = 0; n < c.N; ++n)
          for (int64_t ol = 0; ol < c.OL(); ++ol) {
            const int64_t l = ol * c.stride - c.pad + k * c.dil;
            a.push_back(gq[(n * c.C_out + co) * c.OL() + ol]);
            b.push_back(l >= 0 && l < c.L ? x[(n * c.C_in + ci) * c.L + l] : 0.0f);
          }
        gw.push_back(reduce(p, a, b, nullptr, key, out++));
      }
  return gw;
}

// gb[co]: a sum (mul exact) over (n, ol).
std::vector<float> literal_grad_bias(const Case& c, const LayerNumerics& nm, const std::vector<float>& gq,
                                     DrawKey key) {
  const MacPolicy p = sum_mac(nm);
  std::vector<float> gb;
  for (int64_t co = 0; co < c.C_out; ++co) {
    std::vector<float> a, ones;
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t ol = 0; ol < c.OL(); ++ol) {
        a.push_back(gq[(n * c.C_out + co) * c.OL() + ol]);
        ones.push_back(1.0f);
      }
    gb.push_back(reduce(p, a, ones, nullptr, key, static_cast<uint64_t>(co)));
  }
  return gb;
}

void check_literal(const NumericsPolicy& p, uint64_t seed, uint64_t run_seed = 0) {
  for (const Case& c : kCases) {
    INFO(c.name());
    const Operands o = operands(c, seed);
    auto m = make_conv(c, p, o);
    m->context().seed = run_seed;
    m->context().step = 2;
    const LayerNumerics& nm = m->numerics();
    INFO(nm.describe());
    REQUIRE(!is_stochastic(nm.activations));  // the reads below draw nothing
    const Tensor gy = rich_tensor({c.N, c.C_out, c.OL()}, seed + 7);
    const Run r = run_layer(*m, o.x, gy);
    const std::vector<float> gq = quantized(nm.grads, gy.to_vector());
    CHECK(mismatch(r.y, literal_forward(c, nm, o, draw_key(*m, DrawSite::Forward))) == "");
    CHECK(mismatch(r.gx, literal_grad_input(c, nm, gq, o, draw_key(*m, DrawSite::GradInput))) == "");
    CHECK(mismatch(r.gw, literal_grad_weight(c, nm, gq, o, draw_key(*m, DrawSite::GradWeight))) == "");
    if (c.bias) CHECK(mismatch(r.gb, literal_grad_bias(c, nm, gq, draw_key(*m, DrawSite::GradBias))) == "");
  }
}

std::string hex(float x) { return fmt::format("0x{:08x}", test::bits(x)); }

}  // namespace

TEST_CASE("conv1d gradients match finite differences in fp32", "[conv1d]") {
  for (const Case& c : kCases) {
    INFO(c.name());
    Conv1d m(c.C_in, c.C_out, c.KL, c.stride, c.pad, c.dil, c.groups, c.bias);
    const Conv2dParams cp = c.params();
    Tensor x = test::random_tensor({c.N, c.C_in, c.L}, 11).set_requires_grad(true);
    Tensor w = test::random_tensor({c.C_out, c.Cig(), c.KL}, 12).set_requires_grad(true);
    Tensor b = c.bias ? test::random_tensor({c.C_out}, 13).set_requires_grad(true) : Tensor();
    const std::vector<Tensor> inputs = c.bias ? std::vector<Tensor>{x, w, b} : std::vector<Tensor>{x, w};
    auto f = [&](const std::vector<Tensor>& in) {
      return conv1d(m, in[0], in[1], in.size() > 2 ? in[2] : Tensor(), cp);
    };
    const test::GradCheckResult r = test::grad_check(f, inputs);
    INFO(r.detail);
    CHECK(r.ok);
  }
}

TEST_CASE("a conv1d output equals calc --batch dot lines under mul e5m10 / acc e5m10", "[conv1d]") {
  for (int chunk : {0, 3}) {
    for (const Case& c : kCases) {
      INFO(c.name() << " chunk " << chunk);
      NumericsPolicy p = policy({{"mul", "e5m10"}, {"acc", "e5m10"}, {"out", "fp16"}});
      if (chunk) p.set("chunk", std::to_string(chunk));
      const Operands o = operands(c, 40 + chunk);
      auto m = make_conv(c, p, o);
      const std::vector<float> y = m->forward(o.x).to_vector();
      // The same reductions as calculator lines: reads are fp32 (identity), operands in the canonical order
      // (ci of the group, k) with padding positions as zero operands, bias after the terms.
      const std::vector<float> x = o.x.to_vector(), w = o.w.to_vector();
      const std::vector<float> b = c.bias ? o.b.to_vector() : std::vector<float>();
      std::string lines;
      std::vector<float> ta, tb;
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t co = 0; co < c.C_out; ++co)
          for (int64_t ol = 0; ol < c.OL(); ++ol) {
            forward_terms(c, x, w, n, co, ol, &ta, &tb);
            lines += "dot e5m10 e5m10 fp16";
            if (chunk) lines += fmt::format(" chunk={} outer=fp32", chunk);
            if (c.bias) lines += " bias=" + hex(b[co]);
            for (size_t k = 0; k < ta.size(); ++k) lines += " " + hex(ta[k]) + " " + hex(tb[k]);
            lines += "\n";
          }
      std::istringstream input(lines);
      std::ostringstream output;
      REQUIRE(calc::run_calc_batch(input, output, 0) == 0);
      std::istringstream answers(output.str());
      std::vector<float> expected;
      for (std::string a; std::getline(answers, a);) {
        const uint32_t u = static_cast<uint32_t>(std::stoul(a, nullptr, 16));
        float v;
        std::memcpy(&v, &u, 4);
        expected.push_back(v);
      }
      CHECK(mismatch(y, expected) == "");
    }
  }
}

TEST_CASE("conv1d under mul e5m10 acc e5m10 equals mac_reduce in canonical order", "[conv1d]") {
  check_literal(policy({{"mul", "e5m10"}, {"acc", "e5m10"}}), 100);
}

TEST_CASE(
    "conv1d with chunks, narrow grads and accumulator-only formats equals mac_reduce in canonical order",
    "[conv1d]") {
  check_literal(
      policy({{"mul", "e5m10"}, {"acc", "e5m10"}, {"chunk", "4"}, {"grads", "bf16"}, {"out", "bf16"}}), 200);
  check_literal(policy({{"mul", "exact"}, {"acc", "bf16"}, {"chunk", "3"}, {"acc_outer", "e5m10"}}), 300);
  check_literal(policy({{"mul", "posit16_1"},
                        {"acc", "fp64"},
                        {"out", "fp16"},
                        {"grads", "e4m3"},
                        {"weights", "fp8_e4m3"},
                        {"activations", "bf16"}}),
                400);
}

TEST_CASE("conv1d with stochastic rounding equals mac_reduce with the documented draws", "[conv1d]") {
  const NumericsPolicy p = policy({{"mul", "e5m10:sr"},
                                   {"acc", "e5m10:sr"},
                                   {"chunk", "5"},
                                   {"acc_outer", "bf16:sr"},
                                   {"out", "bf16:sr"},
                                   {"grads", "bf16"}});
  check_literal(p, 500, 1234);
  // The draws are really used: another step rounds differently.
  const Case c = kCases[1];
  const Operands o = operands(c, 501);
  auto m = make_conv(c, p, o);
  m->context().step = 3;
  const std::vector<float> a = m->forward(o.x).to_vector();
  m->context().step = 4;
  CHECK(mismatch(m->forward(o.x).to_vector(), a) != "");
}

TEST_CASE("conv1d with dilation 1 equals conv2d on (N, C, 1, L) bit for bit", "[conv1d]") {
  const NumericsPolicy policies[] = {
      policy({{"format", "fp32"}}),
      policy({{"mul", "e5m10"}, {"acc", "e5m10"}, {"grads", "bf16"}}),
      policy({{"mul", "e5m10:sr"}, {"acc", "e5m10:sr"}, {"chunk", "3"}, {"out", "bf16:sr"}}),
  };
  for (const NumericsPolicy& p : policies) {
    for (const Case& c : kCases) {
      if (c.dil != 1) continue;
      INFO(c.name());
      const Operands o = operands(c, 900);
      auto m1 = make_conv(c, p, o);
      auto m2 = std::make_shared<Conv2d>(c.C_in, c.C_out, Size2(1, c.KL), Size2(1, c.stride), Size2(0, c.pad),
                                         c.groups, c.bias);
      m2->apply_numerics(p);
      m2->weight.copy_from(o.w.view({c.C_out, c.Cig(), 1, c.KL}));
      if (c.bias) m2->bias.copy_from(o.b);
      INFO(m1->numerics().describe());
      const Tensor gy = rich_tensor({c.N, c.C_out, c.OL()}, 901);
      const Run a = run_layer(*m1, o.x, gy);
      Tensor x2 = o.x.clone().view({c.N, c.C_in, 1, c.L}).set_requires_grad(true);
      Tensor y2 = m2->forward(x2);
      y2.backward(gy.view({c.N, c.C_out, 1, c.OL()}));
      CHECK(mismatch(a.y, y2.to_vector()) == "");
      CHECK(mismatch(a.gx, x2.grad().to_vector()) == "");
      CHECK(mismatch(a.gw, m2->weight.grad().to_vector()) == "");
      if (c.bias) CHECK(mismatch(a.gb, m2->bias.grad().to_vector()) == "");
    }
  }
}

TEST_CASE("conv1d results do not depend on the thread count or the packing blocks", "[conv1d]") {
  // im2col is 16384 rows x 320 columns (> 2^22 floats: the forward is cut into row blocks, the
  // grad-weight into column blocks).
  const Case c{16, 64, 1024, 8, 5, 1, 4, 2, 1, true};
  const Operands o = operands(c, 800);
  const Tensor gy = rich_tensor({c.N, c.C_out, c.OL()}, 801);
  for (const NumericsPolicy& p :
       {policy({{"mul", "e5m10"}, {"acc", "e5m10"}}), policy({{"format", "fp32"}})}) {
    auto m = make_conv(c, p, o);
    std::vector<Run> runs;
    for (int threads : {1, 2}) {
      cpu_backend().set_threads(threads);
      runs.push_back(run_layer(*m, o.x, gy));
    }
    cpu_backend().set_threads(0);
    CHECK(mismatch(runs[1].y, runs[0].y) == "");
    CHECK(mismatch(runs[1].gx, runs[0].gx) == "");
    CHECK(mismatch(runs[1].gw, runs[0].gw) == "");
    CHECK(mismatch(runs[1].gb, runs[0].gb) == "");
    // Sampled outputs against mac_reduce in canonical order (every output would take long).
    const LayerNumerics& nm = m->numerics();
    const std::vector<float> x = o.x.to_vector(), w = o.w.to_vector(), b = o.b.to_vector(),
                             g = gy.to_vector();
    std::vector<float> got, want, ta, tb;
    for (int64_t out = 0; out < c.N * c.C_out * c.OL(); out += 97) {
      const int64_t ol = out % c.OL(), co = out / c.OL() % c.C_out, n = out / c.OL() / c.C_out;
      forward_terms(c, x, w, n, co, ol, &ta, &tb);
      got.push_back(runs[0].y[out]);
      want.push_back(reduce(nm.mac, ta, tb, &b[co], {}, static_cast<uint64_t>(out)));
    }
    for (int64_t out = 0; out < c.C_out * c.Cig() * c.KL; out += 13) {
      const int64_t k = out % c.KL, ci = out / c.KL % c.Cig(), co = out / c.KL / c.Cig();
      ta.clear(), tb.clear();
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t ol = 0; ol < c.OL(); ++ol) {
          const int64_t l = ol * c.stride - c.pad + k * c.dil;
          ta.push_back(g[(n * c.C_out + co) * c.OL() + ol]);
          tb.push_back(l >= 0 && l < c.L ? x[(n * c.C_in + ci) * c.L + l] : 0.0f);
        }
      got.push_back(runs[0].gw[out]);
      want.push_back(reduce(backward_mac(nm), ta, tb, nullptr, {}, static_cast<uint64_t>(out)));
    }
    CHECK(mismatch(got, want) == "");
  }
}

TEST_CASE("conv1d in plain fp32 matches a float64 reference (shapes, dilation, stride, padding)",
          "[conv1d]") {
  struct Shaped {
    Case c;
    int64_t want_OL;  // PyTorch's output length for these parameters
  };
  const Shaped cases[] = {
      {{2, 3, 20, 5, 3, 1, 0, 1, 1, true}, 18}, {{2, 3, 20, 5, 3, 1, 1, 1, 1, true}, 20},
      {{2, 3, 20, 5, 3, 2, 1, 1, 1, true}, 10}, {{2, 3, 20, 5, 3, 1, 2, 2, 1, true}, 20},
      {{2, 4, 20, 4, 3, 3, 0, 4, 2, false}, 4}, {{1, 2, 7, 2, 5, 2, 4, 3, 1, true}, 2},
      {{2, 6, 31, 6, 4, 2, 3, 5, 6, true}, 11},
  };
  for (const Shaped& s : cases) {
    const Case& c = s.c;
    INFO(c.name());
    REQUIRE(c.OL() == s.want_OL);
    const Operands o = operands(c, 1000);
    auto m = make_conv(c, policy({{"format", "fp32"}}), o);
    REQUIRE(m->numerics().passthrough());
    const Tensor gy = rich_tensor({c.N, c.C_out, c.OL()}, 1001);
    const Run r = run_layer(*m, o.x, gy);
    REQUIRE(r.y.size() == static_cast<size_t>(c.N * c.C_out * s.want_OL));
    const std::vector<float> x = o.x.to_vector(), w = o.w.to_vector(), g = gy.to_vector();
    const std::vector<float> b = c.bias ? o.b.to_vector() : std::vector<float>();
    // |fp32 - exact| <= K * 2^-23 * sum |terms| (sequential binary32 sum, plus the products' roundings).
    auto close = [](float got, double want, double abs_sum, int64_t K) {
      return std::fabs(static_cast<double>(got) - want) <=
             static_cast<double>(K + 2) * 0x1p-23 * abs_sum + 1e-30;
    };
    int bad = 0;
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t co = 0; co < c.C_out; ++co)
        for (int64_t ol = 0; ol < c.OL(); ++ol) {
          double sum = c.bias ? b[co] : 0.0, abs_sum = c.bias ? std::fabs(b[co]) : 0.0;
          for (int64_t cl = 0; cl < c.Cig(); ++cl)
            for (int64_t k = 0; k < c.KL; ++k) {
              const int64_t l = ol * c.stride - c.pad + k * c.dil;
              if (l < 0 || l >= c.L) continue;
              const double t = static_cast<double>(x[(n * c.C_in + co / c.Cog() * c.Cig() + cl) * c.L + l]) *
                               w[(co * c.Cig() + cl) * c.KL + k];
              sum += t, abs_sum += std::fabs(t);
            }
          bad += !close(r.y[(n * c.C_out + co) * c.OL() + ol], sum, abs_sum, c.Cig() * c.KL + 1);
        }
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t ci = 0; ci < c.C_in; ++ci)
        for (int64_t l = 0; l < c.L; ++l) {
          double sum = 0.0, abs_sum = 0.0;
          for (int64_t ol = 0; ol < c.OL(); ++ol)
            for (int64_t k = 0; k < c.KL; ++k)
              if (ol * c.stride - c.pad + k * c.dil == l)
                for (int64_t co = ci / c.Cig() * c.Cog(); co < (ci / c.Cig() + 1) * c.Cog(); ++co) {
                  const double t = static_cast<double>(g[(n * c.C_out + co) * c.OL() + ol]) *
                                   w[(co * c.Cig() + ci % c.Cig()) * c.KL + k];
                  sum += t, abs_sum += std::fabs(t);
                }
          bad += !close(r.gx[(n * c.C_in + ci) * c.L + l], sum, abs_sum, c.Cog() * c.KL);
        }
    for (int64_t co = 0; co < c.C_out; ++co)
      for (int64_t cl = 0; cl < c.Cig(); ++cl)
        for (int64_t k = 0; k < c.KL; ++k) {
          double sum = 0.0, abs_sum = 0.0;
          for (int64_t n = 0; n < c.N; ++n)
            for (int64_t ol = 0; ol < c.OL(); ++ol) {
              const int64_t l = ol * c.stride - c.pad + k * c.dil;
              if (l < 0 || l >= c.L) continue;
              const double t = static_cast<double>(g[(n * c.C_out + co) * c.OL() + ol]) *
                               x[(n * c.C_in + co / c.Cog() * c.Cig() + cl) * c.L + l];
              sum += t, abs_sum += std::fabs(t);
            }
          bad += !close(r.gw[(co * c.Cig() + cl) * c.KL + k], sum, abs_sum, c.N * c.OL());
        }
    for (int64_t co = 0; co < c.C_out && c.bias; ++co) {
      double sum = 0.0, abs_sum = 0.0;
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t ol = 0; ol < c.OL(); ++ol) {
          sum += g[(n * c.C_out + co) * c.OL() + ol];
          abs_sum += std::fabs(g[(n * c.C_out + co) * c.OL() + ol]);
        }
      bad += !close(r.gb[co], sum, abs_sum, c.N * c.OL());
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("conv1d rejects shapes that do not fit", "[conv1d]") {
  Conv1d m(4, 6, 3, 1, 1, 2, 2);
  CHECK_THROWS_WITH(m.forward(Tensor::zeros({1, 3, 9})), Catch::Contains("does not fit"));
  CHECK_THROWS_WITH(m.forward(Tensor::zeros({1, 4, 2})), Catch::Contains("shorter than the dilated kernel"));
  CHECK_THROWS_AS(Conv1d(4, 5, 3, 1, 1, 1, 2), std::invalid_argument);
  CHECK_THROWS_AS(Conv1d(4, 4, 3, 1, 1, 0), std::invalid_argument);
  Tensor y = Tensor::zeros({1, 6, 1, 5});
  CHECK_THROWS_WITH(
      cpu_backend().conv2d_forward(MacPolicy{}, conv1d_params(1, 0, 1, 1), Tensor::zeros({1, 4, 1, 9}),
                                   Tensor::zeros({6, 4, 1, 3}), nullptr, y, {}),
      Catch::Contains("y has shape"));
}
