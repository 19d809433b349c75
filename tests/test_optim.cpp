// Optimizers and schedules against hand-worked values and float64 references;
// emulated update arithmetic against literal format operations.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "backends/cpu/cpu_backend.h"
#include "core/autograd.h"
#include "numerics/format_spec.h"
#include "numerics/round.h"
#include "numerics/update_arith.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "tests/test_util.h"

using emu::Tensor;

namespace {

// One parameter p with gradient g set by hand.
Tensor param(float v) { return Tensor::from_vector({1}, {v}).set_requires_grad(true); }
void set_grad(Tensor& p, float g) {
  p.zero_grad();
  emu::accumulate_grad(p, Tensor::from_vector({1}, {g}));
}

}  // namespace

TEST_CASE("SGD with momentum and Nesterov: hand-worked steps", "[optim]") {
  // loss = p: gradient 1 every step; lr 0.1, momentum 0.9.
  Tensor p = param(1);
  emu::SgdOptions o;
  o.lr = 0.1f;
  o.momentum = 0.9f;
  emu::SGD sgd({{"p", p}}, o);
  set_grad(p, 1);
  sgd.step();  // buf = 1, p = 1 - 0.1
  CHECK(p.item() == Approx(0.9).epsilon(1e-7));
  set_grad(p, 1);
  sgd.step();  // buf = 0.9 + 1 = 1.9, p = 0.9 - 0.19
  CHECK(p.item() == Approx(0.71).epsilon(1e-6));

  Tensor q = param(1);
  o.nesterov = true;
  emu::SGD nesterov({{"q", q}}, o);
  set_grad(q, 1);
  nesterov.step();  // buf = 1, d = 1 + 0.9 * 1, q = 1 - 0.19
  CHECK(q.item() == Approx(0.81).epsilon(1e-6));

  Tensor r = param(2);
  emu::SgdOptions wd;
  wd.lr = 0.5f;
  wd.weight_decay = 0.1f;
  emu::SGD decay({{"r", r}}, wd);
  set_grad(r, 0);
  decay.step();  // g = 0 + 0.1 * 2, r = 2 - 0.5 * 0.2
  CHECK(r.item() == Approx(1.9).epsilon(1e-6));
}

TEST_CASE("Adam and AdamW follow the float64 formulas", "[optim]") {
  for (bool decoupled : {false, true}) {
    Tensor p = param(0.5f);
    emu::AdamOptions o;
    o.lr = 0.01f;
    o.weight_decay = 0.1f;
    o.decoupled = decoupled;
    emu::Adam adam({{"p", p}}, o);
    double pd = 0.5, m = 0, v = 0;
    const double grads[] = {0.3, -0.2, 0.7, 0.1, -0.5};
    for (int t = 1; t <= 5; ++t) {
      set_grad(p, static_cast<float>(grads[t - 1]));
      adam.step();
      double g = static_cast<float>(grads[t - 1]);
      if (decoupled)
        pd -= 0.01 * 0.1 * pd;
      else
        g += 0.1 * pd;
      m = 0.9 * m + 0.1 * g;
      v = 0.999 * v + 0.001 * g * g;
      double mhat = m / (1 - std::pow(0.9, t)), vhat = v / (1 - std::pow(0.999, t));
      pd -= 0.01 * mhat / (std::sqrt(vhat) + 1e-8);
      INFO("decoupled " << decoupled << " step " << t);
      CHECK(p.item() == Approx(pd).epsilon(1e-5));
    }
  }
}

TEST_CASE("an update format rounds every step of the update", "[optim]") {
  emu::Format f = emu::parse_format("e5m10");
  Tensor p = param(0.3f);
  emu::SgdOptions o;
  o.lr = 0.01f;
  o.momentum = 0.9f;
  emu::SGD sgd({{"p", p}}, o);
  sgd.set_update_format(f);
  // Literal: the steps of optim_ops.cpp, each one R_f.
  double pe = 0.3f, buf = 0;
  const float grads[] = {0.123f, -0.456f, 0.789f};
  for (int t = 0; t < 3; ++t) {
    set_grad(p, grads[t]);
    sgd.step();
    double g = emu::quantize(f, grads[t]);
    buf = t == 0 ? g : emu::format_add(f, emu::format_mul(f, 0.9f, buf), emu::format_mul(f, 1.0f, g));
    pe = emu::format_sub(f, pe, emu::format_mul(f, 0.01f, buf));
    CHECK(p.item() == static_cast<float>(pe));
  }
  // The same run in plain fp32 differs: the format really rounds.
  Tensor q = param(0.3f);
  emu::SGD plain({{"q", q}}, o);
  for (float g : grads) {
    set_grad(q, g);
    plain.step();
  }
  CHECK(q.item() != p.item());
}

TEST_CASE("optimizer state round-trips through its state dict", "[optim]") {
  Tensor p = param(1), q = param(1);
  emu::Adam a({{"p", p}}, emu::AdamOptions());
  set_grad(p, 0.5f);
  a.step();
  emu::Adam b({{"p", q}}, emu::AdamOptions());
  b.load_state_dict(a.state_dict());
  q.copy_from(p);
  set_grad(p, -0.25f);
  set_grad(q, -0.25f);
  a.step();
  b.step();
  CHECK(p.item() == q.item());
  CHECK(b.steps() == 2);
}

TEST_CASE("learning-rate schedules", "[optim]") {
  emu::StepSchedule step(0.1, 10, 0.5);
  CHECK(step.lr_at(9) == 0.1f);
  CHECK(step.lr_at(10) == 0.05f);
  CHECK(step.lr_at(25) == 0.025f);
  emu::CosineSchedule cosine(1.0, 100, 0.1);
  for (int s : {0, 1, 17, 50, 73, 99}) {
    double expected = 0.1 + 0.9 * (1 + std::cos(M_PI * s / 100.0)) / 2;  // libm as the outside reference
    CHECK(cosine.lr_at(s) == Approx(expected).epsilon(1e-6));
  }
  CHECK(cosine.lr_at(100) == 0.1f);
  emu::WarmupSchedule warm(std::make_shared<emu::ConstantSchedule>(0.4), 4);
  CHECK(warm.lr_at(0) == 0.1f);
  CHECK(warm.lr_at(3) == 0.4f);
  CHECK(warm.lr_at(10) == 0.4f);
  for (double x = 0; x <= M_PI; x += 0.01) CHECK(emu::schedule_cos(x) == Approx(std::cos(x)).margin(1e-14));
}

TEST_CASE("gradient clipping by the global norm", "[optim]") {
  Tensor a = param(0), b = param(0);
  set_grad(a, 3);
  set_grad(b, 4);
  double norm = emu::clip_grad_norm({{"a", a}, {"b", b}}, 1.0);
  CHECK(norm == 5.0);
  CHECK(a.grad().item() == Approx(0.6).epsilon(1e-6));
  CHECK(b.grad().item() == Approx(0.8).epsilon(1e-6));
  set_grad(a, 0.1f);
  set_grad(b, 0.1f);
  emu::clip_grad_norm({{"a", a}, {"b", b}}, 1.0);
  CHECK(a.grad().item() == 0.1f);
}

TEST_CASE("the fp32 update's std::sqrt is IEEE's correctly rounded square root", "[optim]") {
  // optim_ops.cpp uses std::sqrt in the plain-fp32 update; it must equal the
  // emulated fp32 square root bit for bit.
  emu::Format fp32;
  std::mt19937 rng(9);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng() & 0x7fffffffu;
    float x;
    std::memcpy(&x, &bits, 4);
    if (std::isnan(x)) continue;
    float a = std::sqrt(x), b = static_cast<float>(emu::format_sqrt(fp32, x));
    REQUIRE(std::memcmp(&a, &b, 4) == 0);
  }
}

TEST_CASE("the CPU sgd_update in fp32 equals sgd_step element by element for every switch", "[optim]") {
  // The plain fp32 loop is specialised per combination of weight decay, momentum,
  // first step and Nesterov (backends/cpu/optim_ops.cpp); each must give the
  // bits of the generic step, called here element by element, with 1-3 threads.
  emu::CpuBackend& cpu = emu::cpu_backend();
  const int threads_before = cpu.threads();
  const int64_t n = 1037;  // several chunks and a ragged tail
  const Tensor p0 = emu::test::rich_tensor({n}, 1), g = emu::test::rich_tensor({n}, 2);
  const Tensor b0 = emu::test::rich_tensor({n}, 3);
  for (int combo = 0; combo < 16; ++combo) {
    emu::SgdUpdate o;
    o.lr = 0.1f;
    o.weight_decay = combo & 1 ? 5e-4f : 0.0f;
    o.momentum = combo & 2 ? 0.9f : 0.0f;
    o.dampening = combo & 2 ? 0.1f : 0.0f;
    o.first_step = (combo & 4) != 0;
    o.nesterov = (combo & 8) != 0;
    o.update_format = emu::parse_format("fp32");
    const emu::SgdStep s = emu::sgd_constants(o);
    std::vector<float> want_p = p0.to_vector(), want_b = b0.to_vector();
    const std::vector<float> gv = g.to_vector();
    for (int64_t i = 0; i < n; ++i)
      emu::sgd_step(emu::UpdateArith(o.update_format), s, want_p[i], gv[i],
                    o.momentum != 0 ? &want_b[i] : nullptr);
    for (int threads = 1; threads <= 3; ++threads) {
      cpu.set_threads(threads);
      Tensor p = Tensor::from_vector({n}, p0.to_vector()), b = Tensor::from_vector({n}, b0.to_vector());
      cpu.sgd_update(o, p, g, b);
      INFO("combo " << combo << ", threads " << threads);
      CHECK(std::memcmp(p.to_vector().data(), want_p.data(), n * sizeof(float)) == 0);
      if (o.momentum != 0) CHECK(std::memcmp(b.to_vector().data(), want_b.data(), n * sizeof(float)) == 0);
    }
  }
  cpu.set_threads(threads_before);
}
