// Conv2d (layers/conv2d.h, backends/cpu/conv_ops.cpp):
//  - finite-difference gradients in plain fp32 (stride, padding, dilation, groups, bias);
//  - forward, grad-input, grad-weight and grad-bias under emulated formats equal,
//    bit for bit, literal loops over the canonical orders of docs/contract.md section 4
//    (with chunks, bias, dilation, stochastic rounding and its draw numbering);
//  - reads: `weights: fp8_e4m3` multiplies with e4m3-rounded weights;
//  - plain fp32 equals a naive binary32 loop;
//  - the GEMMs over operands made on demand (every fast path) equal the literal loops on
//    hostile data (signed zeros, subnormals, overflowing and underflowing products, ties,
//    Inf and NaN) with 1, 2 and 3 threads.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/autograd.h"
#include "layers/conv2d.h"
#include "layers/layer_io.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/grad_check.h"
#include "tests/sanitized.h"
#include "tests/test_util.h"

using namespace emu;
using emu::test::bits;
using emu::test::mismatch;
using emu::test::policy;

namespace {

// Values over 6 binades around 1, 10% zeros and one -0 (test_util.h rich_tensor).
Tensor rich_tensor(const Shape& shape, uint64_t seed, double zero_fraction = 0.1) {
  return test::rich_tensor(shape, seed, {zero_fraction, 6, -3, true});
}

struct Case {
  int64_t N, C_in, H, W, C_out;
  int KH, KW, sh, sw, ph, pw, groups;
  bool bias;
  int dh = 1, dw = 1;  // dilation
  Conv2dParams params() const {
    Conv2dParams p;
    p.stride_h = sh, p.stride_w = sw, p.pad_h = ph, p.pad_w = pw, p.groups = groups;
    p.dilation_h = dh, p.dilation_w = dw;
    return p;
  }
  // PyTorch's output size: the dilated kernel spans d (K - 1) + 1 input positions.
  int64_t OH() const { return (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1; }
  int64_t OW() const { return (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1; }
  // The input position tap kh (kw) of output oh (ow) reads.
  int64_t ih(int64_t oh, int64_t kh) const { return oh * sh - ph + kh * dh; }
  int64_t iw(int64_t ow, int64_t kw) const { return ow * sw - pw + kw * dw; }
  int64_t Cig() const { return C_in / groups; }
  int64_t Cog() const { return C_out / groups; }
  std::string name() const {
    return "x (" + std::to_string(N) + "," + std::to_string(C_in) + "," + std::to_string(H) + "," +
           std::to_string(W) + ") k " + std::to_string(KH) + "x" + std::to_string(KW) + " s " +
           std::to_string(sh) + "x" + std::to_string(sw) + " p " + std::to_string(ph) + "x" +
           std::to_string(pw) + " g " + std::to_string(groups) + " d " + std::to_string(dh) + "x" +
           std::to_string(dw) + (bias ? " bias" : "");
  }
};

const Case kCases[] = {
    {2, 3, 6, 5, 4, 3, 3, 1, 1, 1, 1, 1, true},   // same-size 3x3
    {2, 4, 7, 6, 6, 3, 2, 2, 1, 1, 0, 2, true},   // strided, rectangular, two groups
    {3, 4, 5, 5, 4, 3, 3, 2, 2, 1, 1, 4, false},  // depthwise, stride 2
    {2, 6, 4, 4, 3, 1, 1, 2, 2, 0, 0, 3, true},   // 1x1, stride 2, groups 3
    {1, 2, 5, 6, 2, 5, 3, 1, 2, 2, 1, 1, true},   // wide kernel, padding 2
};

// Dilated cases (N, C_in, H, W, C_out, KH, KW, sh, sw, ph, pw, groups, bias, dh, dw).
const Case kDilatedCases[] = {
    {2, 3, 7, 8, 4, 3, 3, 1, 1, 2, 2, 1, true, 2, 2},   // same-size 3x3 at dilation 2
    {2, 4, 9, 7, 6, 3, 2, 2, 1, 1, 0, 2, true, 3, 2},   // strided, rectangular, two groups, 3x2 dilation
    {3, 4, 8, 8, 4, 2, 3, 2, 3, 1, 2, 4, false, 4, 1},  // depthwise, dilation along H only
    {1, 2, 5, 9, 2, 1, 4, 1, 2, 0, 3, 1, true, 5, 2},   // 1-row kernel (dilation_h unused), wide padding
};

struct Operands {
  Tensor x, w, b;
};

Operands operands(const Case& c, uint64_t seed) {
  Operands o;
  o.x = rich_tensor({c.N, c.C_in, c.H, c.W}, seed);
  o.w = rich_tensor({c.C_out, c.Cig(), c.KH, c.KW}, seed + 1);
  if (c.bias) o.b = rich_tensor({c.C_out}, seed + 2, 0.0);
  return o;
}

// docs/contract.md section 4 for one output, written out: positions k = 0, 1, ... arrive in the
// canonical order through term(a, b) (a padding position is a zero operand); :sr draws at
// base + site with the sites of numerics/mac.h.
struct LiteralMac {
  LiteralMac(const MacPolicy& p, int64_t K, DrawKey key, uint64_t output)
      : p(p), K(K), key(key), base(output * mac_site_count(K, p.chunk)) {}
  const MacPolicy& p;
  int64_t K;
  DrawKey key;
  uint64_t base;
  double acc = 0.0, outer = 0.0;
  int64_t k = 0;

  uint32_t draw(const Format& f, uint64_t site) const {
    return is_stochastic(f) ? philox_draw(key.seed, key.stream, base + site) : 0;
  }
  int64_t chunks() const { return p.chunk > 0 && K > 0 ? (K + p.chunk - 1) / p.chunk : 1; }
  void term(float a, float b) {
    if (p.chunk > 0 && k > 0 && k % p.chunk == 0) {  // a run of `chunk` positions ends: promote it
      outer = format_add(p.acc_outer, outer, acc, draw(p.acc_outer, 2 * K + k / p.chunk - 1));
      acc = 0.0;
    }
    if (a != 0.0f && b != 0.0f) {                                        // zero operands are skipped
      double product = static_cast<double>(a) * static_cast<double>(b);  // exact
      if (!p.mul_exact) product = round_value(p.mul, product, draw(p.mul, 2 * k));
      acc = format_add(p.acc, acc, product, draw(p.acc, 2 * k + 1));
    }
    ++k;
  }
  float result(const float* bias) {
    REQUIRE(k == K);
    Format last = p.acc;
    if (p.chunk > 0) {
      outer = format_add(p.acc_outer, outer, acc, draw(p.acc_outer, 2 * K + chunks() - 1));
      acc = outer;
      last = p.acc_outer;
    }
    if (bias) acc = format_add(last, acc, *bias, draw(last, 2 * K + chunks()));
    return static_cast<float>(round_value(p.out, acc, draw(p.out, 2 * K + chunks() + 1)));
  }
};

// Forward: y[n][co][oh][ow] over (ci of the group, kh, kw), reads rounded into the policy's formats.
std::vector<float> literal_forward(const Case& c, const LayerNumerics& nm, const Operands& o, DrawKey key) {
  const std::vector<float> x = o.x.to_vector(), w = o.w.to_vector();
  const std::vector<float> b = c.bias ? o.b.to_vector() : std::vector<float>();
  std::vector<float> y;
  const int64_t K = c.Cig() * c.KH * c.KW;
  uint64_t out_index = 0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t co = 0; co < c.C_out; ++co)
      for (int64_t oh = 0; oh < c.OH(); ++oh)
        for (int64_t ow = 0; ow < c.OW(); ++ow) {
          LiteralMac mac(nm.mac, K, key, out_index++);
          const int64_t g = co / c.Cog();
          for (int64_t ci = 0; ci < c.Cig(); ++ci)
            for (int64_t kh = 0; kh < c.KH; ++kh)
              for (int64_t kw = 0; kw < c.KW; ++kw) {
                const int64_t ih = c.ih(oh, kh), iw = c.iw(ow, kw);
                const float wv = quantize(nm.weights, w[((co * c.Cig() + ci) * c.KH + kh) * c.KW + kw]);
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) {
                  mac.term(0.0f, wv);  // padding
                  continue;
                }
                const float xv =
                    quantize(nm.activations, x[((n * c.C_in + g * c.Cig() + ci) * c.H + ih) * c.W + iw]);
                mac.term(xv, wv);
              }
          float bv = c.bias ? quantize(nm.weights, b[co]) : 0.0f;
          y.push_back(mac.result(c.bias ? &bv : nullptr));
        }
  return y;
}

// Grad-input: gx[n][ci][ih][iw] over (co of the group, kh, kw); a position whose output pixel
// does not exist is a zero operand.
std::vector<float> literal_grad_input(const Case& c, const LayerNumerics& nm, const std::vector<float>& gq,
                                      const Operands& o, DrawKey key = {}) {
  const std::vector<float> w = o.w.to_vector();
  MacPolicy p = nm.mac;
  p.out = nm.grads;
  std::vector<float> gx;
  const int64_t K = c.Cog() * c.KH * c.KW;
  uint64_t out_index = 0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t ci = 0; ci < c.C_in; ++ci)
      for (int64_t ih = 0; ih < c.H; ++ih)
        for (int64_t iw = 0; iw < c.W; ++iw) {
          LiteralMac mac(p, K, key, out_index++);
          const int64_t g = ci / c.Cig(), cl = ci % c.Cig();
          for (int64_t co = g * c.Cog(); co < (g + 1) * c.Cog(); ++co)
            for (int64_t kh = 0; kh < c.KH; ++kh)
              for (int64_t kw = 0; kw < c.KW; ++kw) {
                const float wv = quantize(nm.weights, w[((co * c.Cig() + cl) * c.KH + kh) * c.KW + kw]);
                const int64_t th = ih + c.ph - kh * c.dh, tw = iw + c.pw - kw * c.dw;
                if (th < 0 || tw < 0 || th % c.sh || tw % c.sw || th / c.sh >= c.OH() ||
                    tw / c.sw >= c.OW()) {
                  mac.term(0.0f, wv);
                  continue;
                }
                mac.term(gq[((n * c.C_out + co) * c.OH() + th / c.sh) * c.OW() + tw / c.sw], wv);
              }
          gx.push_back(mac.result(nullptr));
        }
  return gx;
}

// Grad-weight: gw[co][ci][kh][kw] over (n, oh, ow).
std::vector<float> literal_grad_weight(const Case& c, const LayerNumerics& nm, const std::vector<float>& gq,
                                       const Operands& o, DrawKey key = {}) {
  const std::vector<float> x = o.x.to_vector();
  MacPolicy p = nm.mac;
  p.out = nm.grads;
  std::vector<float> gw;
  const int64_t K = c.N * c.OH() * c.OW();
  uint64_t out_index = 0;
  for (int64_t co = 0; co < c.C_out; ++co)
    for (int64_t cl = 0; cl < c.Cig(); ++cl)
      for (int64_t kh = 0; kh < c.KH; ++kh)
        for (int64_t kw = 0; kw < c.KW; ++kw) {
          LiteralMac mac(p, K, key, out_index++);
          const int64_t ci = co / c.Cog() * c.Cig() + cl;
          for (int64_t n = 0; n < c.N; ++n)
            for (int64_t oh = 0; oh < c.OH(); ++oh)
              for (int64_t ow = 0; ow < c.OW(); ++ow) {
                const float gv = gq[((n * c.C_out + co) * c.OH() + oh) * c.OW() + ow];
                const int64_t ih = c.ih(oh, kh), iw = c.iw(ow, kw);
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) {
                  mac.term(gv, 0.0f);
                  continue;
                }
                mac.term(gv, quantize(nm.activations, x[((n * c.C_in + ci) * c.H + ih) * c.W + iw]));
              }
          gw.push_back(mac.result(nullptr));
        }
  return gw;
}

// Grad-bias: a plain sum over (n, oh, ow) with mul exact (sum_mac), rounded to the grads format.
std::vector<float> literal_grad_bias(const Case& c, const LayerNumerics& nm, const std::vector<float>& gq,
                                     DrawKey key = {}) {
  MacPolicy p = nm.mac;
  p.out = nm.grads;
  p.mul_exact = true;
  std::vector<float> gb;
  const int64_t K = c.N * c.OH() * c.OW();
  for (int64_t co = 0; co < c.C_out; ++co) {
    LiteralMac mac(p, K, key, static_cast<uint64_t>(co));
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t s = 0; s < c.OH() * c.OW(); ++s)
        mac.term(gq[(n * c.C_out + co) * c.OH() * c.OW() + s], 1.0f);
    gb.push_back(mac.result(nullptr));
  }
  return gb;
}

// A Conv2d of case c under `p`, holding the operands' values.
std::shared_ptr<Conv2d> make_conv(const Case& c, const NumericsPolicy& p, const Operands& o) {
  auto m = std::make_shared<Conv2d>(c.C_in, c.C_out, Size2(c.KH, c.KW), Size2(c.sh, c.sw), Size2(c.ph, c.pw),
                                    c.groups, c.bias);
  m->params.dilation_h = c.dh, m->params.dilation_w = c.dw;
  m->apply_numerics(p);
  m->weight.copy_from(o.w);
  if (c.bias) m->bias.copy_from(o.b);
  return m;
}

struct Run {
  std::vector<float> y, gx, gw, gb;
};

// Forward and backward through the layer with incoming gradient gy. Tensors the layer takes
// uninitialised start as NaN, so an output element the backend leaves unwritten fails the checks.
Run run_layer(Conv2d& m, const Tensor& x_values, const Tensor& gy) {
  struct PoisonGuard {
    PoisonGuard() { Storage::poison_uninitialized(true); }
    ~PoisonGuard() { Storage::poison_uninitialized(false); }
  } poison;
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

// Forward and backward of every case through the layer against the literal loops, with the draw keys
// of the layer's sites (the reads must not draw: grads, weights and activations deterministic).
template <size_t Count>
void check_literal(const NumericsPolicy& p, uint64_t seed, const Case (&cases)[Count],
                   uint64_t run_seed = 0) {
  for (const Case& c : cases) {
    INFO(c.name());
    const Operands o = operands(c, seed);
    auto m = make_conv(c, p, o);
    m->context().seed = run_seed;
    const LayerNumerics& nm = m->numerics();
    INFO(nm.describe());
    const Tensor gy = rich_tensor({c.N, c.C_out, c.OH(), c.OW()}, seed + 7);
    const Run r = run_layer(*m, o.x, gy);
    CHECK(mismatch(r.y, literal_forward(c, nm, o, draw_key(*m, DrawSite::Forward))) == "");
    std::vector<float> gq = gy.to_vector();
    for (float& v : gq) v = quantize(nm.grads, v);
    CHECK(mismatch(r.gx, literal_grad_input(c, nm, gq, o, draw_key(*m, DrawSite::GradInput))) == "");
    CHECK(mismatch(r.gw, literal_grad_weight(c, nm, gq, o, draw_key(*m, DrawSite::GradWeight))) == "");
    if (c.bias) CHECK(mismatch(r.gb, literal_grad_bias(c, nm, gq, draw_key(*m, DrawSite::GradBias))) == "");
  }
}

void check_literal(const NumericsPolicy& p, uint64_t seed) { check_literal(p, seed, kCases); }

}  // namespace

TEST_CASE("conv2d gradients match finite differences in fp32") {
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  cases.insert(cases.end(), std::begin(kDilatedCases), std::end(kDilatedCases));
  for (const Case& c : cases) {
    INFO(c.name());
    Conv2d m(c.C_in, c.C_out, Size2(c.KH, c.KW), Size2(c.sh, c.sw), Size2(c.ph, c.pw), c.groups, c.bias);
    const Conv2dParams cp = c.params();
    Tensor x = test::random_tensor({c.N, c.C_in, c.H, c.W}, 11);
    Tensor w = test::random_tensor({c.C_out, c.Cig(), c.KH, c.KW}, 12);
    Tensor b = c.bias ? test::random_tensor({c.C_out}, 13) : Tensor();
    x.set_requires_grad(true);
    w.set_requires_grad(true);
    std::vector<Tensor> inputs = {x, w};
    if (c.bias) inputs.push_back(b.set_requires_grad(true));
    auto f = [&](const std::vector<Tensor>& in) {
      return conv2d(m, in[0], in[1], in.size() > 2 ? in[2] : Tensor(), cp);
    };
    test::GradCheckResult r = test::grad_check(f, inputs);
    INFO(r.detail);
    CHECK(r.ok);
  }
}

TEST_CASE("conv2d under mul e5m10 acc e5m10 equals the literal loops") {
  check_literal(policy({{"mul", "e5m10"}, {"acc", "e5m10"}}), 100);
}

TEST_CASE("conv2d with chunks, outer accumulator and narrow grads equals the literal loops") {
  check_literal(
      policy({{"mul", "e5m10"}, {"acc", "e5m10"}, {"chunk", "4"}, {"grads", "bf16"}, {"out", "bf16"}}), 200);
  check_literal(policy({{"mul", "exact"}, {"acc", "bf16"}, {"chunk", "3"}, {"acc_outer", "e5m10"}}), 300);
}

TEST_CASE("conv2d with an accumulator-only accumulator and posit products equals the literal loops") {
  check_literal(policy({{"mul", "posit16_1"}, {"acc", "fp64"}, {"out", "fp16"}, {"grads", "e4m3"}}), 400);
}

TEST_CASE("conv2d with stochastic rounding equals the literal loops with the documented draws") {
  NumericsPolicy p = policy({{"mul", "e5m10:sr"},
                             {"acc", "e5m10:sr"},
                             {"chunk", "5"},
                             {"acc_outer", "bf16:sr"},
                             {"out", "bf16:sr"}});
  for (const Case& c : kCases) {
    INFO(c.name());
    const Operands o = operands(c, 500);
    auto m = make_conv(c, p, o);
    m->context().seed = 1234;
    m->context().step = 3;
    Tensor y = m->forward(o.x);
    const std::vector<float> want = literal_forward(c, m->numerics(), o, draw_key(*m, DrawSite::Forward));
    CHECK(mismatch(y.to_vector(), want) == "");
    // A different step draws differently.
    m->context().step = 4;
    CHECK(mismatch(m->forward(o.x).to_vector(), want) != "");
  }
}

TEST_CASE("dilated conv2d forward, grad-input and grad-weight equal the literal loops") {
  // Packed GEMM paths (im2col and the grad-input gather with dilation), with chunks and narrow grads.
  check_literal(policy({{"mul", "e5m10"}, {"acc", "e5m10"}}), 1100, kDilatedCases);
  check_literal(
      policy({{"mul", "e5m10"}, {"acc", "bf16"}, {"chunk", "4"}, {"grads", "bf16"}, {"out", "e5m10"}}), 1200,
      kDilatedCases);
  // The direct path with every draw at its documented site.
  check_literal(policy({{"mul", "e5m10:sr"},
                        {"acc", "e5m10:sr"},
                        {"chunk", "5"},
                        {"acc_outer", "bf16:sr"},
                        {"out", "bf16:sr"},
                        {"grads", "bf16"}}),
                1300, kDilatedCases, 77);
}

TEST_CASE("conv2d rejects a dilation below 1 and a dilated kernel larger than the padded input") {
  const Case c = kDilatedCases[0];
  Conv2d m(c.C_in, c.C_out, Size2(c.KH, c.KW));
  m.params.dilation_w = 4;  // spans 9 columns: the 8 of x do not hold it
  CHECK_THROWS_WITH(m.forward(Tensor::zeros({1, c.C_in, 9, 8})),
                    Catch::Contains("smaller than the dilated kernel"));
  CHECK_NOTHROW(m.forward(Tensor::zeros({1, c.C_in, 9, 9})));
  Tensor y = Tensor::zeros({1, c.C_out, 7, 7});
  Conv2dParams bad;
  bad.dilation_h = 0;
  CHECK_THROWS_WITH(cpu_backend().conv2d_forward(MacPolicy{}, bad, Tensor::zeros({1, c.C_in, 9, 9}),
                                                 Tensor::zeros({c.C_out, c.C_in, 3, 3}), nullptr, y, {}),
                    Catch::Contains("dilations"));
}

TEST_CASE("conv2d weights fp8_e4m3 multiplies with e4m3-rounded weights") {
  const Case c = kCases[1];
  const Operands o = operands(c, 600);
  Operands rounded = o;
  rounded.w = o.w.clone();
  const Format e4m3 = parse_format("fp8_e4m3");
  for (int64_t i = 0; i < rounded.w.numel(); ++i) rounded.w.data()[i] = quantize(e4m3, rounded.w.data()[i]);
  rounded.b = o.b.clone();  // the bias is a parameter too: read in the weights format
  for (int64_t i = 0; i < rounded.b.numel(); ++i) rounded.b.data()[i] = quantize(e4m3, rounded.b.data()[i]);
  REQUIRE(mismatch(rounded.w.to_vector(), o.w.to_vector()) != "");

  const Tensor gy = rich_tensor({c.N, c.C_out, c.OH(), c.OW()}, 601);
  auto fp8 = make_conv(c, policy({{"format", "fp32"}, {"weights", "fp8_e4m3"}}), o);
  auto plain_rounded = make_conv(c, policy({{"format", "fp32"}}), rounded);
  auto plain = make_conv(c, policy({{"format", "fp32"}}), o);
  const Run a = run_layer(*fp8, o.x, gy), b = run_layer(*plain_rounded, o.x, gy),
            d = run_layer(*plain, o.x, gy);
  CHECK(mismatch(a.y, b.y) == "");
  CHECK(mismatch(a.gx, b.gx) == "");  // grad-input multiplies with the same read weights
  CHECK(mismatch(a.gw, b.gw) == "");
  CHECK(mismatch(a.y, d.y) != "");
  CHECK(mismatch(a.gx, d.gx) != "");
}

TEST_CASE("conv2d in plain fp32 equals a naive binary32 loop") {
  for (const Case& c : kCases) {
    INFO(c.name());
    const Operands o = operands(c, 700);
    auto m = make_conv(c, policy({{"format", "fp32"}}), o);
    REQUIRE(m->numerics().passthrough());
    const Tensor gy = rich_tensor({c.N, c.C_out, c.OH(), c.OW()}, 701);
    const Run r = run_layer(*m, o.x, gy);
    const std::vector<float> x = o.x.to_vector(), w = o.w.to_vector(), g = gy.to_vector();
    const std::vector<float> b = c.bias ? o.b.to_vector() : std::vector<float>();
    auto X = [&](int64_t n, int64_t ci, int64_t ih, int64_t iw) {
      return x[((n * c.C_in + ci) * c.H + ih) * c.W + iw];
    };
    auto Wv = [&](int64_t co, int64_t cl, int64_t kh, int64_t kw) {
      return w[((co * c.Cig() + cl) * c.KH + kh) * c.KW + kw];
    };
    auto G = [&](int64_t n, int64_t co, int64_t oh, int64_t ow) {
      return g[((n * c.C_out + co) * c.OH() + oh) * c.OW() + ow];
    };
    auto inside = [&](int64_t ih, int64_t iw) { return ih >= 0 && ih < c.H && iw >= 0 && iw < c.W; };

    std::vector<float> y, gx, gw, gb;
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t co = 0; co < c.C_out; ++co)
        for (int64_t oh = 0; oh < c.OH(); ++oh)
          for (int64_t ow = 0; ow < c.OW(); ++ow) {
            float acc = 0.0f;
            for (int64_t cl = 0; cl < c.Cig(); ++cl)
              for (int64_t kh = 0; kh < c.KH; ++kh)
                for (int64_t kw = 0; kw < c.KW; ++kw) {
                  const int64_t ih = oh * c.sh - c.ph + kh, iw = ow * c.sw - c.pw + kw;
                  if (inside(ih, iw))
                    acc = acc + X(n, co / c.Cog() * c.Cig() + cl, ih, iw) * Wv(co, cl, kh, kw);
                }
            if (c.bias) acc = acc + b[co];
            y.push_back(acc);
          }
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t ci = 0; ci < c.C_in; ++ci)
        for (int64_t ih = 0; ih < c.H; ++ih)
          for (int64_t iw = 0; iw < c.W; ++iw) {
            float acc = 0.0f;
            const int64_t grp = ci / c.Cig();
            for (int64_t co = grp * c.Cog(); co < (grp + 1) * c.Cog(); ++co)
              for (int64_t kh = 0; kh < c.KH; ++kh)
                for (int64_t kw = 0; kw < c.KW; ++kw) {
                  const int64_t th = ih + c.ph - kh, tw = iw + c.pw - kw;
                  if (th >= 0 && tw >= 0 && th % c.sh == 0 && tw % c.sw == 0 && th / c.sh < c.OH() &&
                      tw / c.sw < c.OW())
                    acc = acc + G(n, co, th / c.sh, tw / c.sw) * Wv(co, ci % c.Cig(), kh, kw);
                }
            gx.push_back(acc);
          }
    for (int64_t co = 0; co < c.C_out; ++co)
      for (int64_t cl = 0; cl < c.Cig(); ++cl)
        for (int64_t kh = 0; kh < c.KH; ++kh)
          for (int64_t kw = 0; kw < c.KW; ++kw) {
            float acc = 0.0f;
            for (int64_t n = 0; n < c.N; ++n)
              for (int64_t oh = 0; oh < c.OH(); ++oh)
                for (int64_t ow = 0; ow < c.OW(); ++ow) {
                  const int64_t ih = oh * c.sh - c.ph + kh, iw = ow * c.sw - c.pw + kw;
                  if (inside(ih, iw))
                    acc = acc + G(n, co, oh, ow) * X(n, co / c.Cog() * c.Cig() + cl, ih, iw);
                }
            gw.push_back(acc);
          }
    for (int64_t co = 0; co < c.C_out; ++co) {
      float acc = 0.0f;
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t oh = 0; oh < c.OH(); ++oh)
          for (int64_t ow = 0; ow < c.OW(); ++ow) acc = acc + G(n, co, oh, ow);
      gb.push_back(acc);
    }
    CHECK(mismatch(r.y, y) == "");
    CHECK(mismatch(r.gx, gx) == "");
    CHECK(mismatch(r.gw, gw) == "");
    if (c.bias) CHECK(mismatch(r.gb, gb) == "");
  }
}

TEST_CASE("conv2d results do not depend on the thread count or the packing blocks") {
  // The forward's im2col (32768 rows x 144) and the grad-weight's (32768 x 144) are larger than one
  // packing block (2^22 floats), so both are cut; the results must not show it.
  const Case c{8, 16, 64, 64, 2, 3, 3, 1, 1, 1, 1, 1, true};
  const Operands o = operands(c, 800);
  const Tensor gy = rich_tensor({c.N, c.C_out, c.OH(), c.OW()}, 801);
  auto m = make_conv(c, policy({{"mul", "e5m10"}, {"acc", "e5m10"}}), o);
  std::vector<Run> runs;
  for (int threads : {1, 2}) {
    cpu_backend().set_threads(threads);
    runs.push_back(run_layer(*m, o.x, gy));
  }
  cpu_backend().set_threads(0);
  CHECK(mismatch(runs[1].y, runs[0].y) == "");
  CHECK(mismatch(runs[1].gx, runs[0].gx) == "");
  CHECK(mismatch(runs[1].gw, runs[0].gw) == "");
  std::vector<float> gq = gy.to_vector();
  for (float& v : gq) v = quantize(m->numerics().grads, v);
  CHECK(mismatch(runs[0].y, literal_forward(c, m->numerics(), o, {})) == "");
  CHECK(mismatch(runs[0].gw, literal_grad_weight(c, m->numerics(), gq, o)) == "");
}

TEST_CASE("conv2d under layer-level emulation rounds only the output") {
  const Case c = kCases[0];
  const Operands o = operands(c, 900);
  auto layer = make_conv(c, policy({{"format", "bf16"}, {"emulation", "layer"}}), o);
  auto plain = make_conv(c, policy({{"format", "fp32"}}), o);
  const Tensor gy = rich_tensor({c.N, c.C_out, c.OH(), c.OW()}, 901);
  const Run a = run_layer(*layer, o.x, gy);
  const Run b = run_layer(*plain, o.x, gy);
  const Format bf16 = parse_format("bf16");
  std::vector<float> y = b.y;
  for (float& v : y) v = quantize(bf16, v);
  CHECK(mismatch(a.y, y) == "");
  std::vector<float> gw = b.gw;
  for (float& v : gw) v = quantize(bf16, v);
  CHECK(mismatch(a.gw, gw) == "");
}

TEST_CASE("conv2d rejects shapes that do not fit") {
  Conv2d m(4, 6, 3, 1, 1, 2);
  CHECK_THROWS_WITH(m.forward(Tensor::zeros({1, 3, 5, 5})), Catch::Contains("does not fit"));
  CHECK_THROWS_WITH(m.forward(Tensor::zeros({1, 4, 1, 0})), Catch::Contains("smaller than"));
  CHECK_THROWS_AS(Conv2d(4, 5, 3, 1, 1, 2), std::invalid_argument);
  Tensor y = Tensor::zeros({1, 6, 5, 5});
  CHECK_THROWS_WITH(cpu_backend().conv2d_forward(MacPolicy{}, Conv2dParams{}, Tensor::zeros({1, 4, 5, 5}),
                                                 Tensor::zeros({6, 4, 3, 3}), nullptr, y, {}),
                    Catch::Contains("y has shape"));
}

namespace {

// Hostile operands for the GEMM paths that pack im2col and the gathered gradient straight into their
// panels: signed zeros, subnormals, magnitudes whose products overflow e6m6 or fall below its
// subnormal range, few-bit values whose products round on ties, and, with `specials`, Inf and NaN;
// `integer`: integers in [-128, 127] (the int path).
Tensor hostile_tensor(const Shape& shape, uint64_t seed, bool specials, bool integer) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) {
    const uint64_t r = rng();
    const float sign = (r >> 40) & 1 ? -1.0f : 1.0f;
    if (integer) {
      x = r % 5 == 0 ? 0.0f : static_cast<float>(static_cast<int>((r >> 8) % 256) - 128);
      continue;
    }
    switch (r % 16) {
      case 0:
        x = 0.0f;
        break;
      case 1:
        x = -0.0f;
        break;
      case 2:
        x = bits_float((static_cast<uint32_t>(r >> 16) & 0x807fffffu) | 1u);  // subnormal
        break;
      case 3:
        x = sign * std::ldexp(1.0f + static_cast<float>((r >> 20) & 0xff) / 256.0f,
                              12 + static_cast<int>(r >> 50) % 9);
        break;
      case 4:
        x = sign * std::ldexp(1.0f + static_cast<float>((r >> 20) & 0xff) / 256.0f,
                              -40 - static_cast<int>(r >> 50) % 40);
        break;
      case 5:
      case 6:
        x = sign *
            std::ldexp(1.0f + static_cast<float>((r >> 20) % 8) / 8.0f, static_cast<int>(r >> 50) % 5 - 2);
        break;
      case 7:
        if (specials) {
          const float s[3] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN()};
          x = s[(r >> 30) % 3];
          break;
        }
        [[fallthrough]];
      default:
        x = sign *
            std::ldexp(1.0f + static_cast<float>(r >> 41) * 0x1p-23f, static_cast<int>((r >> 8) % 6) - 3);
    }
  }
  return Tensor::from_vector(shape, v);
}

}  // namespace

TEST_CASE("conv2d GEMMs over operands made on demand equal the literal loops on hostile data") {
  // Shapes past one k block (K = 270), one column block (588 pixels), a row tile; strides, padding,
  // dilation, groups; grad-weight with outputs along the taps (C_out/G >= 16) and along the channels.
  const Case cases[] = {
      {3, 30, 14, 14, 20, 3, 3, 2, 2, 1, 1, 1, true},
      {3, 5, 14, 14, 6, 3, 3, 1, 1, 1, 1, 1, true},
      {2, 8, 9, 7, 8, 3, 2, 2, 1, 1, 0, 2, false, 2, 1},
      {2, 6, 5, 5, 18, 1, 1, 2, 2, 0, 0, 1, true},
      // 40 rows over 512 pixels: one task over all rows (gemm.cpp all_rows) with 1, 2 and 3 threads.
      {2, 6, 16, 16, 40, 3, 3, 1, 1, 1, 1, 1, false},
  };
  struct Pol {
    const char *mul, *acc;
    int chunk;
    bool integer;
    const char* out = "fp32";
  };
  // Outputs rounded into e6m6 (the e6m6 training policy's) as well as plain fp32: grad-weight's
  // transposed outputs finish both ways (gemm.cpp, store_transposed).
  const Pol pols[] = {
      {"fp32", "fp32", 0, false},  {"e6m6", "fp32", 0, false},
      {"e6m6", "fp32", 64, false}, {"bf16", "bf16", 0, false},
      {"fp16", "fp16", 5, false},  {"e6m6:rtz", "fp32", 0, false},
      {"e8m22", "fp32", 0, false}, {"posit16_1", "posit16_1", 0, false},
      {"exact", "int32", 0, true}, {"e6m6", "fp32", 0, false, "e6m6"},
  };
  for (const Pol& pl : pols) {
    MacPolicy p;
    p.mul_exact = std::string(pl.mul) == "exact";
    p.mul = parse_format(p.mul_exact ? "fp32" : pl.mul);
    p.acc = parse_format(pl.acc);
    p.out = parse_format(pl.out);
    p.acc_outer = parse_format("fp32");
    p.chunk = pl.chunk;
    LayerNumerics nm;
    nm.weights = nm.activations = parse_format("fp32");
    nm.grads = p.out;  // the literal gradients round into nm.grads, the forward into nm.mac.out
    nm.mac = p;
    for (const Case& c : cases) {
      for (bool specials : {false, true}) {
        if (pl.integer && specials) continue;
        INFO(c.name() << " mul " << pl.mul << " acc " << pl.acc << " out " << pl.out << " chunk " << pl.chunk
                      << " specials " << specials);
        Operands o;
        o.x = hostile_tensor({c.N, c.C_in, c.H, c.W}, 1, specials, pl.integer);
        o.w = hostile_tensor({c.C_out, c.Cig(), c.KH, c.KW}, 2, specials, pl.integer);
        if (c.bias) o.b = hostile_tensor({c.C_out}, 3, false, pl.integer);
        const Tensor gy = hostile_tensor({c.N, c.C_out, c.OH(), c.OW()}, 4, specials, pl.integer);
        const std::vector<float> want_y = literal_forward(c, nm, o, {});
        const std::vector<float> want_gx = literal_grad_input(c, nm, gy.to_vector(), o);
        const std::vector<float> want_gw = literal_grad_weight(c, nm, gy.to_vector(), o);
        // A sanitizer build (tests/sanitized.h) runs 1 and 3 threads: one block
        // for everything, and uneven splits.
        for (int threads : {1, 2, 3}) {
          if (test::kSanitized && threads == 2) continue;
          INFO("threads " << threads);
          cpu_backend().set_threads(threads);
          Tensor y = Tensor::zeros({c.N, c.C_out, c.OH(), c.OW()}), gx = Tensor::zeros(o.x.shape()),
                 gw = Tensor::zeros(o.w.shape());
          cpu_backend().conv2d_forward(p, c.params(), o.x, o.w, c.bias ? &o.b : nullptr, y, {});
          cpu_backend().conv2d_grad_input(p, c.params(), gy, o.w, gx, {});
          cpu_backend().conv2d_grad_weight(p, c.params(), o.x, gy, gw, {});
          CHECK(mismatch(y.to_vector(), want_y) == "");
          CHECK(mismatch(gx.to_vector(), want_gx) == "");
          CHECK(mismatch(gw.to_vector(), want_gw) == "");
        }
        cpu_backend().set_threads(0);
      }
    }
  }
}
