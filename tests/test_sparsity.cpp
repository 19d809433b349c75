// N:M sparsity (docs/contract.md section 5.2, docs/sparsity.md): the nm_mask op on
// hand cases and against an independent reference (a stable sort per group),
// random scores, the masks Linear/Conv2d apply at every read from the dense
// master copy, gradient masks and the mask statistics.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numeric>

#include "backends/cpu/cpu_backend.h"
#include "core/sparsity.h"
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/grad_check.h"
#include "tests/test_util.h"

using emu::DrawKey;
using emu::NmParams;
using emu::NmScoreSource;
using emu::ReadLayout;
using emu::Tensor;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> op_mask(const std::vector<float>& s, int n, int m, ReadLayout l,
                           NmScoreSource score = NmScoreSource::Magnitude, DrawKey key = {}) {
  NmParams p;
  p.n = n;
  p.m = m;
  p.score = score;
  p.layout = l;
  Tensor st = Tensor::from_vector({static_cast<int64_t>(s.size())}, s);
  Tensor mask = Tensor::zeros(st.shape());
  emu::cpu_backend().nm_mask(p, st, mask, key);
  return mask.to_vector();
}

ReadLayout row(int64_t len) { return ReadLayout{1, len, 1}; }

// The reference: per group, indices sorted by (score descending, index ascending) with
// std::stable_sort on double scores (NaN mapped to +inf + a flag), the first N kept.
std::vector<float> reference_mask(const std::vector<double>& score, const std::vector<bool>& is_nan, int n,
                                  int m, ReadLayout l) {
  std::vector<float> mask(score.size(), 0.0f);
  for (int64_t r = 0; r < l.rows(); ++r) {
    for (int64_t g0 = 0; g0 < l.len; g0 += m) {
      std::vector<int64_t> members;
      for (int64_t k = g0; k < std::min<int64_t>(g0 + m, l.len); ++k) members.push_back(l.index(r, k));
      std::stable_sort(members.begin(), members.end(), [&](int64_t a, int64_t b) {
        if (is_nan[a] != is_nan[b]) return static_cast<bool>(is_nan[a]);
        if (is_nan[a]) return false;
        return score[a] > score[b];
      });
      for (size_t j = 0; j < members.size() && static_cast<int>(j) < n; ++j) mask[members[j]] = 1.0f;
    }
  }
  return mask;
}

std::vector<float> reference_magnitude_mask(const std::vector<float>& w, int n, int m, ReadLayout l) {
  std::vector<double> s(w.size());
  std::vector<bool> nan(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    s[i] = std::fabs(static_cast<double>(w[i]));
    nan[i] = std::isnan(w[i]);
  }
  return reference_mask(s, nan, n, m, l);
}

std::vector<float> masked(const std::vector<float>& w, const std::vector<float>& mask) {
  std::vector<float> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) out[i] = mask[i] != 0 ? w[i] : 0.0f;
  return out;
}

using V = std::vector<float>;

}  // namespace

TEST_CASE("nm_mask 2:4 hand cases: magnitude, ties to the lower index", "[sparsity]") {
  CHECK(op_mask({1, 2, 3, 4}, 2, 4, row(4)) == V{0, 0, 1, 1});
  CHECK(op_mask({-5, 1, 0.5f, -3}, 2, 4, row(4)) == V{1, 0, 0, 1});  // magnitude, not signed value
  CHECK(op_mask({1, 1, 1, 1}, 2, 4, row(4)) == V{1, 1, 0, 0});       // all equal: the two lowest indices
  CHECK(op_mask({-2, 2, -2, 2}, 2, 4, row(4)) == V{1, 1, 0, 0});     // |x| ties across signs
  CHECK(op_mask({3, 1, 3, 1}, 2, 4, row(4)) == V{1, 0, 1, 0});       // a tied pair on top
  CHECK(op_mask({1, 3, 1, 3}, 2, 4, row(4)) == V{0, 1, 0, 1});
  CHECK(op_mask({5, 2, 2, 1}, 2, 4, row(4)) == V{1, 1, 0, 0});  // tie for the last place: lower index
  CHECK(op_mask({1, 2, 5, 2}, 2, 4, row(4)) == V{0, 1, 1, 0});
  CHECK(op_mask({0.0f, -0.0f, 0.0f, -0.0f}, 2, 4, row(4)) == V{1, 1, 0, 0});  // -0 == +0
  CHECK(op_mask({1, 2, 3, 4, 5, 6, 7, 8}, 2, 4, row(8)) == V{0, 0, 1, 1, 0, 0, 1, 1});
  CHECK(op_mask({4, 3, 2, 1}, 1, 4, row(4)) == V{1, 0, 0, 0});
  CHECK(op_mask({4, 3, 2, 1}, 3, 4, row(4)) == V{1, 1, 1, 0});
}

TEST_CASE("nm_mask: NaN scores outrank every number (documented), Inf is a number", "[sparsity]") {
  CHECK(op_mask({1, kNaN, 2, 3}, 2, 4, row(4)) == V{0, 1, 0, 1});
  CHECK(op_mask({kNaN, kNaN, kNaN, 1}, 2, 4, row(4)) == V{1, 1, 0, 0});  // NaNs tie: lower index
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(op_mask({-inf, kNaN, 1, 2}, 2, 4, row(4)) == V{1, 1, 0, 0});  // |-inf| = inf, below NaN
  CHECK(op_mask({2, 3, kNaN, inf}, 2, 4, row(4)) == V{0, 0, 1, 1});
}

TEST_CASE("nm_mask: groups shorter than M keep min(N, size)", "[sparsity]") {
  CHECK(op_mask({1, 2, 3, 4, 9, 8}, 2, 4, row(6)) == V{0, 0, 1, 1, 1, 1});  // last group of 2 keeps both
  CHECK(op_mask({1, 2, 3, 4, 9}, 2, 4, row(5)) == V{0, 0, 1, 1, 1});        // ... of 1 keeps it
  CHECK(op_mask({1, 2, 3, 4, 5, 1, 7}, 2, 4, row(7)) == V{0, 0, 1, 1, 1, 0, 1});  // of 3 keeps 2
  CHECK(op_mask({1, 2}, 2, 4, row(2)) == V{1, 1});
  // Rows restart the groups: two rows of 3 (outer 2): each is a single short group of 3.
  CHECK(op_mask({1, 2, 3, 6, 5, 4}, 2, 4, ReadLayout{2, 3, 1}) == V{0, 1, 1, 1, 1, 0});
  // inner > 1: rows run down columns of a (3, 2) tensor: column 0 = {1, 5, 3}, column 1 = {6, 2, 4}.
  CHECK(op_mask({1, 6, 5, 2, 3, 4}, 1, 2, ReadLayout{1, 3, 2}) == V{0, 1, 1, 0, 1, 1});
}

TEST_CASE("nm_mask equals an independent stable-sort reference on random tensors", "[sparsity]") {
  const std::vector<std::pair<int, int>> ratios = {{1, 2}, {2, 4}, {1, 4}, {3, 4}, {2, 8}, {4, 8}, {5, 16}};
  const std::vector<ReadLayout> layouts = {{7, 16, 1}, {3, 10, 1}, {2, 9, 5}, {1, 33, 3}, {4, 1, 2}};
  uint64_t seed = 1;
  for (auto [n, m] : ratios) {
    for (ReadLayout l : layouts) {
      Tensor t = emu::test::random_tensor({l.numel()}, seed++);
      std::vector<float> w = t.to_vector();
      // Force ties, zeros of both signs and a NaN.
      for (size_t i = 0; i < w.size(); i += 5) w[i] = w[i / 2];
      if (w.size() > 3) w[3] = -0.0f;
      if (w.size() > 11) w[11] = kNaN;
      const std::vector<float> got = op_mask(w, n, m, l);
      CHECK(got == reference_magnitude_mask(w, n, m, l));
      // Exactly min(N, size) kept per group.
      for (int64_t r = 0; r < l.rows(); ++r)
        for (int64_t g0 = 0; g0 < l.len; g0 += m) {
          int kept = 0, size = 0;
          for (int64_t k = g0; k < std::min<int64_t>(g0 + m, l.len); ++k, ++size)
            kept += got[l.index(r, k)] != 0;
          CHECK(kept == std::min(n, size));
        }
    }
  }
}

TEST_CASE("nm_mask random scores: Philox draws at the element index, reproducible and key-dependent",
          "[sparsity]") {
  const ReadLayout l{16, 64, 1};
  std::vector<float> zeros(static_cast<size_t>(l.numel()), 0.0f);
  const DrawKey k1{7, 100}, k2{7, 101}, k3{8, 100};
  const std::vector<float> a = op_mask(zeros, 2, 4, l, NmScoreSource::Random, k1);
  CHECK(a == op_mask(zeros, 2, 4, l, NmScoreSource::Random, k1));
  CHECK(a != op_mask(zeros, 2, 4, l, NmScoreSource::Random, k2));
  CHECK(a != op_mask(zeros, 2, 4, l, NmScoreSource::Random, k3));
  // Reference: the draws themselves as scores.
  std::vector<double> s(zeros.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = emu::philox_draw(k1.seed, k1.stream, i);
  CHECK(a == reference_mask(s, std::vector<bool>(s.size(), false), 2, 4, l));
  // Independent of the thread count.
  emu::cpu_backend().set_threads(1);
  const std::vector<float> one = op_mask(zeros, 2, 4, l, NmScoreSource::Random, k1);
  emu::cpu_backend().set_threads(0);
  CHECK(one == a);
}

TEST_CASE("apply_mask is a select: dropped NaN/Inf become +0, kept -0 stays -0", "[sparsity]") {
  Tensor x = Tensor::from_vector({4}, {kNaN, -0.0f, std::numeric_limits<float>::infinity(), 2.5f});
  Tensor mask = Tensor::from_vector({4}, {0, 1, 0, 1});
  Tensor y = Tensor::zeros({4});
  emu::cpu_backend().apply_mask(x, mask, y);
  const std::vector<float> v = y.to_vector();
  CHECK(emu::test::bits(v[0]) == 0u);
  CHECK(emu::test::bits(v[1]) == 0x80000000u);
  CHECK(emu::test::bits(v[2]) == 0u);
  CHECK(v[3] == 2.5f);
}

TEST_CASE("policy keys sparsity, sparsity_on, sparsity_score", "[sparsity]") {
  emu::NumericsPolicy p;
  p.set("sparsity", "2:4");
  emu::LayerNumerics n = p.resolve("fc");
  CHECK(n.sparsity.n == 2);
  CHECK(n.sparsity.m == 4);
  CHECK(n.sparsity.on_weights());
  CHECK_FALSE(n.sparsity.on_grads());
  CHECK(n.describe().find("sparsity=2:4 weights magnitude") != std::string::npos);
  p.set("sparsity_on", "both");
  p.set("sparsity_score", "random");
  n = p.resolve("fc");
  CHECK(n.sparsity.on_grads());
  CHECK(n.sparsity.score == emu::SparsityScore::Random);
  p.set_override("head", "sparsity", "none");
  CHECK_FALSE(p.resolve("head").sparsity.enabled());
  CHECK_THROWS_WITH(p.set("sparsity", "2-4"), Catch::Contains("numerics.default.sparsity: '2-4'"));
  CHECK_THROWS_WITH(p.set("sparsity", "0:4"), Catch::Contains("N:M"));
  CHECK_THROWS_WITH(p.set("sparsity_on", "bias"), Catch::Contains("weights, grads, both"));
  CHECK_THROWS_WITH(p.set("sparsity_score", "nope"), Catch::Contains("inverse_magnitude"));
}

TEST_CASE("Linear with 2:4 equals a Linear whose weights were masked by the reference", "[sparsity]") {
  for (const char* weights : {"fp32", "fp8_e4m3"}) {
    INFO(weights);
    auto layer = std::make_shared<emu::Linear>(16, 6);
    layer->initialize(5);
    emu::NumericsPolicy sp;
    sp.set("weights", weights);
    sp.set("mul", "e5m10");
    sp.set("sparsity", "2:4");
    layer->apply_numerics(sp);
    Tensor x = emu::test::random_tensor({3, 16}, 6);
    const std::vector<float> w0 = layer->weight.to_vector();
    const std::vector<float> y = layer->forward(x).to_vector();
    CHECK(layer->weight.to_vector() == w0);  // the master is never masked

    // The mask is scored on the dense master (before rounding), applied to the rounded read.
    const emu::Format f = emu::parse_format(weights);
    std::vector<float> wq = w0;
    for (float& v : wq) v = emu::quantize(f, v);
    auto plain = std::make_shared<emu::Linear>(16, 6);
    plain->weight.copy_from(
        Tensor::from_vector({6, 16}, masked(wq, reference_magnitude_mask(w0, 2, 4, {6, 16, 1}))));
    plain->bias.copy_from(layer->bias);
    emu::NumericsPolicy dense;
    dense.set("weights", weights);
    dense.set("mul", "e5m10");
    plain->apply_numerics(dense);
    CHECK(emu::test::mismatch(y, plain->forward(x).to_vector()).empty());
    // ... and differs from the dense layer.
    layer->apply_numerics(dense);
    CHECK(emu::test::mismatch(y, layer->forward(x).to_vector()) != "");
  }
}

TEST_CASE("masks are recomputed at every read from the dense master, which keeps training", "[sparsity]") {
  auto layer = std::make_shared<emu::Linear>(8, 2, false);
  layer->initialize(1);
  layer->weight.copy_from(Tensor::from_vector({2, 8}, {1, 2, 3, 4, 4, 3, 2, 1, 9, 1, 1, 9, 1, 9, 9, 1}));
  layer->apply_numerics(emu::test::policy({{"sparsity", "2:4"}}));
  Tensor x = Tensor::from_vector({1, 8}, {1, 10, 100, 1000, 1, 10, 100, 1000});
  // Row 0 keeps {3,4 | 4,3}: 300+4000+4+30; row 1 keeps {9,9 | 9,9}: 9+9000+90+900.
  CHECK(layer->forward(x).to_vector() == V{4334, 9999});
  // The gradient reaching the master is dense: masked weights are trained too.
  Tensor xg = x.clone();
  Tensor y = layer->forward(xg);
  y.backward(Tensor::full({1, 2}, 1.0f));
  CHECK(layer->weight.grad().to_vector() ==
        V{1, 10, 100, 1000, 1, 10, 100, 1000, 1, 10, 100, 1000, 1, 10, 100, 1000});
  // An update that changes the order: the next read follows the new magnitudes.
  layer->weight.copy_from(Tensor::from_vector({2, 8}, {5, 2, 3, 4, 4, 3, 2, 1, 9, 1, 1, 9, 1, 9, 9, 1}));
  CHECK(layer->forward(x).to_vector() == V{4039, 9999});  // row 0 keeps {5,4 | 4,3}: 5+4000+4+30
}

TEST_CASE("Conv2d with 2:4 masks along C*kh*kw of each output channel", "[sparsity]") {
  auto conv = std::make_shared<emu::Conv2d>(2, 3, 2);
  conv->initialize(9);
  Tensor x = emu::test::random_tensor({2, 2, 4, 4}, 10);
  const std::vector<float> w0 = conv->weight.to_vector();
  conv->apply_numerics(emu::test::policy({{"sparsity", "2:4"}}));
  const std::vector<float> y = conv->forward(x).to_vector();
  auto ref = std::make_shared<emu::Conv2d>(2, 3, 2);
  ref->weight.copy_from(
      Tensor::from_vector(conv->weight.shape(), masked(w0, reference_magnitude_mask(w0, 2, 4, {3, 8, 1}))));
  if (conv->bias.defined()) ref->bias.copy_from(conv->bias);
  CHECK(emu::test::mismatch(y, ref->forward(x).to_vector()).empty());
}

TEST_CASE("sparsity_on grads masks the incoming gradient along the output features", "[sparsity]") {
  auto layer = std::make_shared<emu::Linear>(5, 8);
  layer->initialize(2);
  auto ref = std::make_shared<emu::Linear>(5, 8);
  ref->weight.copy_from(layer->weight);
  ref->bias.copy_from(layer->bias);
  layer->apply_numerics(emu::test::policy({{"sparsity", "2:4"}, {"sparsity_on", "grads"}}));
  Tensor x1 = emu::test::random_tensor({3, 5}, 3).set_requires_grad(true);
  Tensor x2 = x1.clone().set_requires_grad(true);
  Tensor gy = emu::test::random_tensor({3, 8}, 4);
  // Forward is dense (no mask on the weights).
  Tensor y1 = layer->forward(x1);
  Tensor y2 = ref->forward(x2);
  CHECK(emu::test::mismatch(y1.to_vector(), y2.to_vector()).empty());
  y1.backward(gy);
  const std::vector<float> g = gy.to_vector();
  y2.backward(Tensor::from_vector({3, 8}, masked(g, reference_magnitude_mask(g, 2, 4, {3, 8, 1}))));
  CHECK(emu::test::mismatch(x1.grad().to_vector(), x2.grad().to_vector()).empty());
  CHECK(emu::test::mismatch(layer->weight.grad().to_vector(), ref->weight.grad().to_vector()).empty());
  CHECK(emu::test::mismatch(layer->bias.grad().to_vector(), ref->bias.grad().to_vector()).empty());
}

namespace {
// Keeps the highest index of each group (scores = the index).
void by_index(const float*, float* scores, int64_t count, const emu::ReadLayout&) {
  for (int64_t i = 0; i < count; ++i) scores[i] = static_cast<float>(i);
}
}  // namespace

TEST_CASE("user score functions: registry and use through the policy", "[sparsity]") {
  emu::register_sparsity_score("test_by_index", by_index);
  CHECK(emu::find_sparsity_score("test_by_index") >= 0);
  auto layer = std::make_shared<emu::Linear>(4, 1, false);
  layer->weight.copy_from(Tensor::from_vector({1, 4}, {9, 8, 1, 2}));
  layer->apply_numerics(emu::test::policy({{"sparsity", "2:4"}, {"sparsity_score", "test_by_index"}}));
  Tensor x = Tensor::from_vector({1, 4}, {1, 10, 100, 1000});
  CHECK(layer->forward(x).to_vector() == V{2100});  // keeps indices 2 and 3
  layer->apply_numerics(emu::test::policy({{"sparsity", "2:4"}, {"sparsity_score", "inverse_magnitude"}}));
  CHECK(layer->forward(x).to_vector() == V{2100});  // the two smallest magnitudes: 1 and 2
  layer->apply_numerics(emu::test::policy({{"sparsity", "2:4"}}));
  CHECK(layer->forward(x).to_vector() == V{89});
}

TEST_CASE("random-score masks change with the step and are the same for the same step", "[sparsity]") {
  auto layer = std::make_shared<emu::Linear>(64, 8, false);
  layer->initialize(4);
  layer->apply_numerics(emu::test::policy({{"sparsity", "2:4"}, {"sparsity_score", "random"}}));
  Tensor x = emu::test::random_tensor({2, 64}, 5);
  layer->context().step = 3;
  const std::vector<float> a = layer->forward(x).to_vector();
  CHECK(a == layer->forward(x).to_vector());
  layer->context().step = 4;
  CHECK(a != layer->forward(x).to_vector());
}

TEST_CASE("mask statistics: kept fraction and bits changed between reads", "[sparsity]") {
  auto layer = std::make_shared<emu::Linear>(8, 1, false);
  layer->weight.copy_from(Tensor::from_vector({1, 8}, {1, 2, 3, 4, 4, 3, 2, 1}));
  layer->apply_numerics(emu::test::policy({{"sparsity", "2:4"}}));
  emu::MaskMonitorScope scope(*layer);
  REQUIRE(scope.active());
  Tensor x = Tensor::full({1, 8}, 1.0f);
  layer->forward(x);
  layer->weight.copy_from(
      Tensor::from_vector({1, 8}, {4, 3, 2, 1, 4, 3, 2, 1}));  // group 0 flips: 4 bits change
  layer->forward(x);
  layer->eval();
  layer->forward(x);  // evaluation reads are not recorded
  const std::vector<emu::MaskStats> s = emu::mask_monitor().take();
  REQUIRE(s.size() == 1);
  CHECK(s[0].module == "");
  CHECK(s[0].tensor == "weight");
  CHECK(s[0].reads == 2);
  CHECK(s[0].elements == 8);
  CHECK(s[0].kept_fraction() == 0.5);
  CHECK(s[0].changed == 4);
  CHECK(s[0].changed_last == 4);
  CHECK(emu::mask_monitor().take().empty());
}
