// Cases of the optimizer updates (core/backend_ops_optim.h): SGD with and
// without momentum, Nesterov and weight decay; Adam and AdamW; the gradient
// clipping scale. Every step is rounded to the policy's element format.
#include "tools/validate_case.h"

namespace emu::validate {
namespace {

void sgd_cases(CaseList& list) {
  struct S {
    const char* name;
    const char* note;
    int64_t n;
    float momentum, dampening, weight_decay;
    bool nesterov, first_step;
    Specials sp;
  };
  const S sgds[] = {
      {"plain_1000", "lr 0.1, no momentum", 1000, 0.0f, 0.0f, 0.0f, false, false, Specials::Zeros},
      {"momentum_first_step", "momentum 0.9: the buffer starts as the gradient", 257, 0.9f, 0.0f, 0.0f, false,
       true, Specials::Zeros},
      {"momentum_dampening_wd", "momentum 0.9, dampening 0.1, weight decay 1e-4", 513, 0.9f, 0.1f, 1e-4f,
       false, false, Specials::Zeros},
      {"nesterov_wd", "Nesterov momentum 0.8, weight decay 5e-4", 129, 0.8f, 0.0f, 5e-4f, true, false,
       Specials::Zeros},
      {"specials", "Inf and NaN gradients and parameters", 97, 0.9f, 0.0f, 1e-2f, false, false,
       Specials::All},
      {"empty", "no parameters", 0, 0.9f, 0.0f, 0.0f, false, false, Specials::None},
  };
  for (const S& s : sgds) {
    Case& c = add_case(list, Op::sgd_update, s.name, s.note);
    c.in("param", {s.n}, s.sp).weight().io();
    c.in("grad", {s.n}, s.sp).grad();
    c.in("momentum_buf", {s.n}, s.sp).io();
    SgdUpdate o;
    o.lr = 0.1f;
    o.momentum = s.momentum;
    o.dampening = s.dampening;
    o.weight_decay = s.weight_decay;
    o.nesterov = s.nesterov;
    o.first_step = s.first_step;
    c.call = [o](CallArgs& a) {
      SgdUpdate u = o;
      u.update_format = a.num.f;
      a.backend.sgd_update(u, a.in("param"), a.in("grad"), a.in("momentum_buf"));
    };
  }
}

void adam_cases(CaseList& list) {
  struct A {
    const char* name;
    const char* note;
    int64_t n;
    float weight_decay;
    bool decoupled;
    float bc1, bc2;
    Specials sp;
  };
  const A adams[] = {
      {"step1_1000", "Adam, step 1 (bias corrections 0.1, 0.001)", 1000, 0.0f, false, 0.1f, 0.001f,
       Specials::Zeros},
      {"step10_wd", "Adam with L2 weight decay 0.01, step 10", 333, 0.01f, false, 1.0f - 0.34867844f,
       1.0f - 0.99004488f, Specials::Zeros},
      {"adamw", "AdamW, decoupled weight decay 0.05", 211, 0.05f, true, 0.5f, 0.02f, Specials::Zeros},
      {"specials", "Inf and NaN everywhere", 77, 0.01f, true, 0.3f, 0.01f, Specials::All},
      {"empty", "no parameters", 0, 0.0f, false, 0.1f, 0.001f, Specials::None},
  };
  for (const A& s : adams) {
    Case& c = add_case(list, Op::adam_update, s.name, s.note);
    c.in("param", {s.n}, s.sp).weight().io();
    c.in("grad", {s.n}, s.sp).grad();
    c.in("exp_avg", {s.n}, s.sp, -0.5f, 0.5f).io();
    c.in("exp_avg_sq", {s.n}, s.sp, 0.0f, 0.5f).io();
    AdamUpdate o;
    o.lr = 1e-3f;
    o.weight_decay = s.weight_decay;
    o.decoupled = s.decoupled;
    o.bias_correction1 = s.bc1;
    o.bias_correction2 = s.bc2;
    c.call = [o](CallArgs& a) {
      AdamUpdate u = o;
      u.update_format = a.num.f;
      a.backend.adam_update(u, a.in("param"), a.in("grad"), a.in("exp_avg"), a.in("exp_avg_sq"));
    };
  }
}

void scale_cases(CaseList& list) {
  struct S {
    const char* name;
    const char* note;
    Shape shape;
    float factor;
    Specials sp;
  };
  const S scales[] = {
      {"clip_1000", "x *= 0.37 (a clipping factor)", {1000}, 0.37f, Specials::All},
      {"matrix_13x17", "a (13,17) gradient, factor 1e-3", {13, 17}, 1e-3f, Specials::Finite},
      {"tiny_factor", "factor 2^-140: subnormal products", {65}, 0x1p-140f, Specials::Zeros},
      {"empty", "no elements", {0}, 0.5f, Specials::None},
  };
  for (const S& s : scales) {
    Case& c = add_case(list, Op::scale, s.name, s.note);
    c.in("x", s.shape, s.sp).grad().io();
    const float factor = s.factor;
    c.call = [factor](CallArgs& a) { a.backend.scale(a.num.f, a.in("x"), factor); };
  }
}

}  // namespace

void add_optim_cases(CaseList& list) {
  sgd_cases(list);
  adam_cases(list);
  scale_cases(list);
}

}  // namespace emu::validate
