// Fault injection (docs/faults.md): a fault at bit b of element i changes
// exactly that code of the tensor's FORMAT (checked with the format's own
// encode), stuck-at and transient semantics, probability faults, faults in
// Linear reads and outputs, the recipe section, a training run with faults,
// and the `emutrain faults` campaign on a tiny model.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "layers/layer_io.h"
#include "layers/linear.h"
#include "numerics/block_format.h"
#include "numerics/format_spec.h"
#include "numerics/round.h"
#include "tests/grad_check.h"
#include "tests/test_trainer_data.h"
#include "tests/test_util.h"
#include "train/faults.h"
#include "train/recipe.h"
#include "train/trainer.h"

using emu::Format;
using emu::Tensor;
using emu::TensorSite;
using namespace emu::train;

namespace {

const char* const kFormats[] = {"e5m2", "bf16", "fp8_e4m3", "posit8_0", "fixed8_4"};

// A leaf module whose context step the tests set.
struct Probe : emu::Module {};

uint64_t code_of(const Format& f, float v) {
  uint64_t c = 0;
  REQUIRE(emu::encode(f, static_cast<double>(v), &c));
  return c;
}

// n values of f: the non-NaN codes taken in turn (canonical codes: encode(decode(c)) == c).
std::vector<float> values_of(const Format& f, size_t n, uint64_t stride) {
  std::vector<float> v;
  const uint64_t codes = uint64_t{1} << f.nbits;
  for (uint64_t c = 1; v.size() < n; c = (c + stride) % codes) {
    const double d = emu::decode(f, c);
    uint64_t back = 0;
    if (std::isnan(d) || !emu::encode(f, d, &back) || back != c) continue;
    v.push_back(static_cast<float>(d));
  }
  return v;
}

FaultSpec flip_at(int64_t element, int bit, int64_t step = 0, FaultKind kind = FaultKind::Flip) {
  FaultSpec s;
  s.site = FaultSite::Weights;
  s.element = element;
  s.bits = {bit};
  s.steps = {step};
  s.kind = kind;
  return s;
}

std::string lines(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("fault_value flips exactly bit b of the format's code, for every code and bit", "[faults]") {
  for (const char* name : kFormats) {
    INFO(name);
    const Format f = emu::parse_format(name);
    const uint64_t codes = uint64_t{1} << f.nbits;
    const uint64_t step = f.nbits > 8 ? 97 : 1;  // bf16: a sample of the codes
    int64_t checked = 0, nan_results = 0;
    for (uint64_t c = 0; c < codes; c += step) {
      const double d = emu::decode(f, c);
      uint64_t back = 0;
      if (std::isnan(d) || !emu::encode(f, d, &back) || back != c) continue;
      for (int b = 0; b < f.nbits; ++b) {
        uint64_t before = 0, after = 0;
        const float v = fault_value(f, static_cast<float>(d), b, FaultKind::Flip, &before, &after);
        REQUIRE(before == c);
        REQUIRE(after == (c ^ (uint64_t{1} << b)));
        if (std::isnan(v)) {
          CHECK(std::isnan(emu::decode(f, after)));  // a NaN code: the carrier keeps no payload
          ++nan_results;
          continue;
        }
        uint64_t re = 0;
        REQUIRE(emu::encode(f, static_cast<double>(v), &re));
        CHECK(re == after);  // the decoded value encodes back to the flipped code
        ++checked;
      }
    }
    CHECK(checked > 8 * f.nbits);
    INFO("NaN results: " << nan_results);
  }
  CHECK_THROWS_WITH(fault_value(emu::parse_format("e5m2"), 1.0f, 8, FaultKind::Flip),
                    Catch::Contains("bits 0..7"));
  CHECK_THROWS_WITH(fault_value(emu::parse_format("e5m2"), 0.1f, 0, FaultKind::Flip),
                    Catch::Contains("not a value"));
}

TEST_CASE("a fault at bit b of element i changes exactly that code and no other element", "[faults]") {
  for (const char* name : kFormats) {
    INFO(name);
    const Format f = emu::parse_format(name);
    const std::vector<float> v = values_of(f, 40, f.nbits > 8 ? 331 : 7);
    Probe m;
    for (int64_t i : {int64_t{0}, int64_t{17}, int64_t{39}}) {
      for (int b = 0; b < f.nbits; ++b) {
        INFO("element " << i << " bit " << b);
        FaultInjector inj({flip_at(i, b)});
        Tensor t = Tensor::from_vector({40}, v);
        const Tensor out = inj.apply(m, TensorSite::Weights, "weight", f, emu::ReadLayout{}, t);
        CHECK(t.to_vector() == v);  // the input is never written
        const std::vector<float> o = out.to_vector();
        for (int64_t j = 0; j < 40; ++j) {
          if (j == i) continue;
          CHECK(emu::test::bits(o[j]) == emu::test::bits(v[j]));
        }
        const uint64_t before = code_of(f, v[i]);
        if (std::isnan(o[i])) {
          CHECK(std::isnan(emu::decode(f, before ^ (uint64_t{1} << b))));
        } else {
          CHECK((code_of(f, o[i]) ^ before) == (uint64_t{1} << b));
        }
        const std::vector<FaultEvent> ev = inj.take_events();
        REQUIRE(ev.size() == 1);
        CHECK(ev[0].element == i);
        CHECK(ev[0].bit == b);
        CHECK(ev[0].code_before == before);
        CHECK(ev[0].code_after == (before ^ (uint64_t{1} << b)));
      }
    }
  }
}

TEST_CASE("transient flips hit the first read of their step only; stuck-at bits persist", "[faults]") {
  const Format f = emu::parse_format("e5m2");
  Probe m;
  const std::vector<float> v = {1.0f, 2.0f, 0.5f, 3.0f, -1.5f, 0.25f};
  Tensor t = Tensor::from_vector({6}, v);
  auto read = [&](FaultInjector& inj, uint64_t step, const Tensor& x) {
    m.context().step = step;
    return inj.apply(m, TensorSite::Weights, "weight", f, emu::ReadLayout{}, x).to_vector();
  };
  SECTION("flip") {
    FaultInjector inj({flip_at(3, 2, 2)});
    CHECK(read(inj, 1, t) == v);
    const std::vector<float> hit = read(inj, 2, t);
    CHECK(hit != v);
    CHECK((code_of(f, hit[3]) ^ code_of(f, v[3])) == 4u);
    CHECK(read(inj, 2, t) == v);  // a second read of step 2 (evaluation): not hit again
    CHECK(read(inj, 3, t) == v);
  }
  SECTION("stuck_at_1") {
    FaultInjector inj({flip_at(3, 0, 2, FaultKind::StuckAt1)});
    CHECK(read(inj, 1, t) == v);
    for (uint64_t step : {2, 3, 4}) {
      // The master changes between reads (training); the stuck bit stays 1.
      std::vector<float> w = v;
      w[3] = step == 4 ? 2.0f : 3.0f;  // codes 0x40 (bit 0 clear) and 0x42
      const std::vector<float> o = read(inj, step, Tensor::from_vector({6}, w));
      CHECK((code_of(f, o[3]) & 1u) == 1u);
      CHECK(code_of(f, o[3]) == (code_of(f, w[3]) | 1u));
      for (int j : {0, 1, 2, 4, 5}) CHECK(o[j] == w[j]);
    }
    CHECK(inj.take_events().size() == 1);  // set once, held after
  }
  SECTION("stuck_at_0 on a bit that is already 0 changes nothing") {
    FaultInjector inj({flip_at(0, 0, 0, FaultKind::StuckAt0)});  // 1.0 in e5m2 is 0x3c
    CHECK(read(inj, 0, t) == v);
    CHECK(read(inj, 1, t) == v);
  }
}

TEST_CASE("probability faults: per element, keyed by seed, reproducible", "[faults]") {
  const Format f = emu::parse_format("bf16");
  Probe m;
  const std::vector<float> v = values_of(f, 4096, 13);
  Tensor t = Tensor::from_vector({4096}, v);
  auto run = [&](double p, uint64_t seed, std::vector<int> bits) {
    FaultSpec s;
    s.probability = p;
    s.seed = seed;
    s.bits = bits;
    FaultInjector inj({s});
    return inj.apply(m, TensorSite::Weights, "weight", f, emu::ReadLayout{}, t).to_vector();
  };
  CHECK(run(0.0, 1, {}) == v);
  const std::vector<float> all = run(1.0, 1, {1});
  for (size_t i = 0; i < v.size(); ++i) CHECK((code_of(f, all[i]) ^ code_of(f, v[i])) == 2u);
  const std::vector<float> a = run(0.2, 5, {});
  CHECK(emu::test::mismatch(a, run(0.2, 5, {})).empty());  // bits (NaN results compare equal)
  CHECK_FALSE(emu::test::mismatch(a, run(0.2, 6, {})).empty());
  size_t changed = 0;
  for (size_t i = 0; i < v.size(); ++i) changed += emu::test::bits(a[i]) != emu::test::bits(v[i]);
  CHECK(changed > 4096 * 0.15);
  CHECK(changed < 4096 * 0.25);
}

TEST_CASE("weight faults in Linear reads leave the master intact; output faults use the out format",
          "[faults]") {
  auto layer = std::make_shared<emu::Linear>(8, 4);
  layer->initialize(1);
  layer->apply_numerics(emu::test::policy({{"weights", "fp8_e4m3"}, {"out", "bf16"}}));
  Tensor x = emu::test::random_tensor({2, 8}, 2);
  const std::vector<float> w0 = layer->weight.to_vector();
  const std::vector<float> clean = layer->forward(x).to_vector();
  const Format e4m3 = emu::parse_format("fp8_e4m3"), bf16 = emu::parse_format("bf16");
  {
    FaultInjector inj({flip_at(5, 6)});
    inj.install();
    const std::vector<float> y = layer->forward(x).to_vector();
    CHECK(layer->weight.to_vector() == w0);
    // Reference: the same layer with weight 5 rounded and flipped by hand.
    auto ref = std::make_shared<emu::Linear>(8, 4);
    std::vector<float> wq = w0;
    for (float& w : wq) w = emu::quantize(e4m3, w);
    wq[5] = static_cast<float>(emu::decode(e4m3, code_of(e4m3, wq[5]) ^ 64u));
    ref->weight.copy_from(Tensor::from_vector({4, 8}, wq));
    ref->bias.copy_from(layer->bias);
    ref->apply_numerics(emu::test::policy({{"weights", "fp8_e4m3"}, {"out", "bf16"}}));
    inj.uninstall();
    CHECK(emu::test::mismatch(y, ref->forward(x).to_vector()).empty());
  }
  {
    FaultSpec s = flip_at(6, 14);
    s.site = FaultSite::Activations;
    FaultInjector inj({s});
    inj.install();
    const std::vector<float> y = layer->forward(x).to_vector();
    inj.uninstall();
    for (size_t j = 0; j < y.size(); ++j) {
      if (j == 6)
        CHECK((code_of(bf16, y[j]) ^ code_of(bf16, clean[j])) == (1u << 14));
      else
        CHECK(emu::test::bits(y[j]) == emu::test::bits(clean[j]));
    }
  }
  CHECK(emu::test::mismatch(layer->forward(x).to_vector(), clean).empty());  // no hook left behind
}

TEST_CASE("block formats: element faults change one element code, metadata faults one block's scale",
          "[faults]") {
  const Format f = emu::parse_format("mxfp8_e4m3");
  const emu::ReadLayout l{2, 32, 1};  // two rows of one 32-element block each
  Tensor w = emu::test::random_tensor({2, 32}, 7);
  Tensor r = emu::read_as(f, w, emu::DrawKey{}, l);  // the read, as read_weight makes it
  const std::vector<float> v = r.to_vector();
  const emu::BlockEncoded clean = emu::encode_blocks(f, v.data(), l);
  REQUIRE(clean.meta.size() == 2);
  const CodeSpace space = code_space(f, l, r);
  CHECK(space.elements == 64);
  CHECK(space.metas == 2);
  CHECK(space.elem_bits == 8);
  CHECK(space.meta_bits == 8);
  Probe m;
  {
    FaultSpec s = flip_at(40, 3);
    FaultInjector inj({s});
    const std::vector<float> o = inj.apply(m, TensorSite::Weights, "weight", f, l, r).to_vector();
    const emu::BlockEncoded e = emu::encode_blocks(f, o.data(), l);
    CHECK(e.meta == clean.meta);
    for (size_t i = 0; i < 64; ++i) CHECK((e.elements[i] ^ clean.elements[i]) == (i == 40 ? 8u : 0u));
  }
  {
    // Scale bit 0 of block 1 (E8M0): the block's values double or halve, block 0 is untouched.
    FaultSpec s = flip_at(1, 0);
    s.site = FaultSite::Metadata;
    FaultInjector inj({s});
    const std::vector<float> o = inj.apply(m, TensorSite::Weights, "weight", f, l, r).to_vector();
    const double factor = (clean.meta[1] & 1u) ? 0.5 : 2.0;
    for (size_t i = 0; i < 64; ++i) {
      if (i < 32)
        CHECK(emu::test::bits(o[i]) == emu::test::bits(v[i]));
      else
        CHECK(static_cast<double>(o[i]) == static_cast<double>(v[i]) * factor);
    }
    const std::vector<FaultEvent> ev = inj.take_events();
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].site == FaultSite::Metadata);
    CHECK(ev[0].code_after == (ev[0].code_before ^ 1u));
    // A metadata fault on a scalar format is an error, not a silent no-op.
    CHECK_THROWS_WITH(inj.apply(m, TensorSite::Weights, "weight", emu::parse_format("e5m2"), l, r),
                      Catch::Contains("not a block format"));
  }
}

TEST_CASE("recipe faults section: checked with key paths", "[faults]") {
  const std::string base = R"(
model: {type: mlp, hidden: [8]}
data: {type: mnist, root: /nonexistent}
optimizer: {type: sgd}
epochs: 1
)";
  Recipe r = parse_recipe(
      base + "faults:\n  - {site: weights, module: fc1, bits: [7], step: 3, kind: stuck_at_1}\n", "t.yaml");
  std::vector<FaultSpec> f = parse_faults(r.root["faults"]);
  REQUIRE(f.size() == 1);
  CHECK(f[0].module == "fc1");
  CHECK(f[0].bits == std::vector<int>{7});
  CHECK(f[0].steps == std::vector<int64_t>{3});
  CHECK(f[0].kind == FaultKind::StuckAt1);
  CHECK(f[0].element == -1);
  r = parse_recipe(base + "faults:\n  - {site: activations, probability: 0.001, count: 2, seed: 4}\n",
                   "t.yaml");
  f = parse_faults(r.root["faults"]);
  CHECK(f[0].bits.empty());
  CHECK(f[0].count == 2);
  CHECK(f[0].probability == 0.001);
  CHECK_THROWS_WITH(parse_recipe(base + "faults:\n  - {site: weights}\n", "t.yaml"),
                    Catch::Contains("faults[0]: give exactly one of step, steps or probability"));
  CHECK_THROWS_WITH(parse_recipe(base + "faults:\n  - {site: weights, step: 1, bits: [-1]}\n", "t.yaml"),
                    Catch::Contains("faults[0].bits[0]"));
  CHECK_THROWS_WITH(parse_recipe(base + "faults:\n  - {site: weights, step: 1, when: 3}\n", "t.yaml"),
                    Catch::Contains("faults[0].when"));
  CHECK(parse_faults(
            parse_recipe(base + "faults:\n  - {site: metadata, step: 1}\n", "t.yaml").root["faults"])[0]
            .site == FaultSite::Metadata);
  CHECK_THROWS_WITH(parse_recipe(base + "faults:\n  - {site: weights, step: 1, kind: sticky}\n", "t.yaml"),
                    Catch::Contains("faults[0].kind"));
}

namespace {

std::string mlp_recipe(const std::string& root, const std::string& extra = "") {
  return R"(
model: {type: mlp, hidden: [16]}
data:
  type: mnist
  root: )" +
         root + R"(
  train_source: t10k
  train_range: [0, 96]
  test_range: [96, 160]
  batch_size: 16
  workers: 0
optimizer: {type: sgd, lr: 0.05, momentum: 0.9}
epochs: 2
seed: 3
logging: {every_steps: 0, progress: off}
)" + extra;
}

TrainSummary train_quietly(const std::string& text, const std::string& out) {
  Recipe r = parse_recipe(text, "test.yaml", {}, "test");
  TrainOptions o;
  o.out_dir = out;
  std::ostringstream log;
  o.log = &log;
  return train_recipe(r, o);
}

}  // namespace

TEST_CASE("a training run with faults logs its events", "[faults]") {
  emu::test::TempDir dir;
  emu::test::write_mnist_idx(dir.str() + "/mnist", 160);
  const std::string faults =
      "faults:\n  - {site: weights, module: '**', tensor: weight, step: 2, bits: random, count: 2}\n"
      "  - {site: gradients, step: 4, bits: [3]}\n";
  const TrainSummary s = train_quietly(mlp_recipe(dir.str() + "/mnist", faults), dir.str() + "/run");
  const std::string csv = lines(dir.str() + "/run/fault_events.csv");
  CHECK(csv.find("step,site,module,tensor,element,bit") == 0);
  // Step 2: two bits of one element of each of the two Linear weights; step 4: one bit of each grad read.
  size_t weights = 0, grads = 0;
  std::stringstream ss(csv);
  for (std::string l; std::getline(ss, l);) {
    weights += l.rfind("2,weights,", 0) == 0;
    grads += l.rfind("4,gradients,", 0) == 0;
  }
  CHECK(weights == 4);
  CHECK(grads == 2);
  CHECK(lines(dir.str() + "/run/log.txt").find("faults: ") != std::string::npos);
  // The same run again: the same events (Philox keyed draws).
  train_quietly(mlp_recipe(dir.str() + "/mnist", faults), dir.str() + "/run2");
  CHECK(lines(dir.str() + "/run2/fault_events.csv") == csv);
  (void)s;
}

TEST_CASE("emutrain faults writes one CSV row per site with sane values", "[faults][cli]") {
  const char* bin = std::getenv("EMUTRAIN_BIN");
  if (!bin || !*bin) FAIL("EMUTRAIN_BIN is not set (tests/faults.cmake sets it to the emutrain binary)");
  emu::test::TempDir dir;
  emu::test::write_mnist_idx(dir.str() + "/mnist", 160);
  const std::string recipe = dir.str() + "/r.yaml";
  std::ofstream(recipe) << mlp_recipe(dir.str() + "/mnist");
  const TrainSummary s = train_quietly(mlp_recipe(dir.str() + "/mnist"), dir.str() + "/run");
  const std::string cmd = std::string(bin) + " faults " + recipe + " --checkpoint " + s.final_checkpoint +
                          " --trials 4 --out " + dir.str() + "/campaign > " + dir.str() + "/out.txt 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(dir.str() + "/campaign/faults.csv");
  std::string header;
  std::getline(in, header);
  CHECK(header.rfind("site,module,tensor,format,elements,trials,mismatch_rate,", 0) == 0);
  std::vector<std::vector<std::string>> rows;
  for (std::string l; std::getline(in, l);) {
    std::vector<std::string> cells;
    std::stringstream ls(l);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    rows.push_back(cells);
  }
  // The MLP: two Linear layers, each one weight read and one output.
  REQUIRE(rows.size() == 4);
  int weights = 0, outputs = 0;
  for (const auto& r : rows) {
    REQUIRE(r.size() == 12);
    weights += r[0] == "weights" && r[2] == "weight";
    outputs += r[0] == "activations" && r[2] == "output";
    CHECK(r[3] == "fp32");
    CHECK(std::stoll(r[4]) > 0);
    CHECK(r[5] == "4");
    const double rate = std::stod(r[6]);
    CHECK(rate >= 0.0);
    CHECK(rate <= 1.0);
    CHECK(std::stoll(r[7]) <= 4);
    CHECK(std::stoll(r[10]) <= 4);
  }
  CHECK(weights == 2);
  CHECK(outputs == 2);
  std::ifstream svg(dir.str() + "/campaign/faults.svg");
  CHECK(svg.good());
}
