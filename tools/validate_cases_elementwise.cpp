// Cases of the element-wise family (core/backend_ops_elementwise.h):
// activations and their gradients for every kind, the residual add, dropout,
// softmax / log-softmax (exact and with the policy's exp), the losses.
#include <cmath>

#include "core/draw_key.h"
#include "tools/validate_case.h"

namespace emu::validate {
namespace {

const Activation kKinds[] = {Activation::Relu, Activation::Gelu, Activation::Silu, Activation::Tanh,
                             Activation::Sigmoid};

void activation_cases(CaseList& list) {
  for (Activation k : kKinds) {
    const std::string kind = activation_name(k);
    {
      Case& c = add_case(list, Op::activation_forward, kind + "_1000",
                         kind + " of 1000 values in [-8, 8] and specials");
      c.in("x", {1000}, Specials::All, -8.0f, 8.0f);
      c.out("y", {1000});
      c.call = [k](CallArgs& a) {
        a.backend.activation_forward(k, a.num.activation(k), a.num.f, a.in("x"), a.out("y"), a.key);
      };
    }
    {
      Case& c =
          add_case(list, Op::activation_backward, kind + "_1000", kind + "' with x, y and gy of 1000 values");
      c.in("x", {1000}, Specials::All, -8.0f, 8.0f);
      c.in("y", {1000}, Specials::Zeros, -1.0f, 1.0f);
      c.in("gy", {1000}).grad();
      c.out("gx", {1000});
      c.call = [k](CallArgs& a) {
        a.backend.activation_backward(k, a.num.activation(k), a.num.f, a.in("x"), a.in("y"), a.in("gy"),
                                      a.out("gx"), a.key);
      };
    }
  }
  {
    Case& c = add_case(list, Op::activation_forward, "gelu_transposed", "gelu of a transposed (17,19)");
    c.in("x", {19, 17}, Specials::All, -5.0f, 5.0f).t(0, 1);
    c.out("y", {17, 19});
    c.call = [](CallArgs& a) {
      a.backend.activation_forward(Activation::Gelu, a.num.activation(Activation::Gelu), a.num.f, a.in("x"),
                                   a.out("y"), a.key);
    };
  }
  {
    Case& c = add_case(list, Op::activation_forward, "sigmoid_empty", "no elements");
    c.in("x", {0, 3});
    c.out("y", {0, 3});
    c.call = [](CallArgs& a) {
      a.backend.activation_forward(Activation::Sigmoid, a.num.activation(Activation::Sigmoid), a.num.f,
                                   a.in("x"), a.out("y"), a.key);
    };
  }
  {
    Case& c =
        add_case(list, Op::activation_backward, "silu_views", "silu' with transposed and narrowed operands");
    c.in("x", {13, 11}, Specials::All, -6.0f, 6.0f).t(0, 1);
    c.in("y", {11, 15}).narrow(1, 1, 13);
    c.in("gy", {13, 11}).t(0, 1).grad();
    c.out("gx", {11, 13});
    c.call = [](CallArgs& a) {
      a.backend.activation_backward(Activation::Silu, a.num.activation(Activation::Silu), a.num.f, a.in("x"),
                                    a.in("y"), a.in("gy"), a.out("gx"), a.key);
    };
  }
}

void add_dropout_cases(CaseList& list) {
  auto add = [](CallArgs& a) { a.backend.elementwise_add(a.num.f, a.in("a"), a.in("b"), a.out("y"), a.key); };
  {
    Case& c = add_case(list, Op::elementwise_add, "contiguous_1000", "a + b with every special value");
    c.in("a", {1000});
    c.in("b", {1000});
    c.out("y", {1000});
    c.call = add;
  }
  {
    Case& c = add_case(list, Op::elementwise_add, "views", "a transposed a and a narrowed b");
    c.in("a", {21, 9}).t(0, 1);
    c.in("b", {9, 25}).narrow(1, 3, 21);
    c.out("y", {9, 21});
    c.call = add;
  }
  {
    Case& c = add_case(list, Op::elementwise_add, "cancellation", "b = -a + tiny: exact sums near zero");
    c.in("a", {257}, Specials::Zeros, -1.0e-3f, 1.0e-3f);
    c.in("b", {257}, Specials::Zeros, -1.0e-3f, 1.0e-3f);
    c.out("y", {257});
    c.call = add;
  }
  {
    Case& c = add_case(list, Op::elementwise_add, "empty", "no elements");
    c.in("a", {0});
    c.in("b", {0});
    c.out("y", {0});
    c.call = add;
  }
  struct D {
    const char* name;
    const char* note;
    float p, scale;
    bool transposed;
  };
  const D drops[] = {
      {"p0.3_1000", "p = 0.3, scale 1/0.7", 0.3f, 1.0f / 0.7f, false},
      {"p0", "p = 0 keeps everything (scale 1)", 0.0f, 1.0f, false},
      {"p1", "p = 1 drops everything", 1.0f, 1.0f, false},
      {"p0.5_transposed", "p = 0.5 on a transposed (23,7)", 0.5f, 2.0f, true},
  };
  for (const D& d : drops) {
    Case& c = add_case(list, Op::dropout, d.name, d.note);
    if (d.transposed) {
      c.in("x", {7, 23}).t(0, 1);
      c.out("y", {23, 7});
    } else {
      c.in("x", {1000});
      c.out("y", {1000});
    }
    const float p = d.p, s = d.scale;
    c.call = [p, s](CallArgs& a) {
      const DrawKey mask{a.key.seed, mix64(a.key.stream ^ 0x64726f70ull)};
      a.backend.dropout(p, s, a.num.f, a.in("x"), a.out("y"), mask, a.key);
    };
  }
}

void softmax_cases(CaseList& list) {
  struct S {
    const char* name;
    const char* note;
    int64_t rows, C;
    Specials sp;
    bool transposed;
  };
  const S shapes[] = {
      {"7x13", "7 rows of 13", 7, 13, Specials::Zeros, false},
      {"1x1", "one element", 1, 1, Specials::None, false},
      {"3x300", "long rows (chunks)", 3, 300, Specials::Zeros, false},
      {"transposed_9x33", "a transposed (33,9)", 9, 33, Specials::Zeros, true},
      {"specials_6x17", "rows with Inf, NaN and huge values", 6, 17, Specials::All, false},
      {"empty_0x5", "no rows", 0, 5, Specials::None, false},
  };
  for (const S& s : shapes)
    for (bool log : {false, true})
      for (Op op : {Op::softmax_forward, Op::softmax_forward_fn}) {
        Case& c = add_case(list, op, std::string(log ? "log_" : "") + s.name,
                           std::string(log ? "log-softmax, " : "softmax, ") + s.note);
        if (s.transposed)
          c.in("x", {s.C, s.rows}, s.sp, -10.0f, 10.0f).t(0, 1);
        else
          c.in("x", {s.rows, s.C}, s.sp, -10.0f, 10.0f);
        c.out("y", {s.rows, s.C});
        if (op == Op::softmax_forward)
          c.call = [log](CallArgs& a) {
            a.backend.softmax_forward(a.num.mac, log, a.in("x"), a.out("y"), a.key);
          };
        else
          c.call = [log](CallArgs& a) {
            a.backend.softmax_forward_fn(a.num.mac, log, a.num.function(Function::SoftmaxExp), a.in("x"),
                                         a.out("y"), a.key);
          };
      }
  for (bool log : {false, true}) {
    const float lo = log ? -12.0f : 0.0f, hi = log ? 0.0f : 1.0f;  // log-probabilities or probabilities
    {
      Case& c = add_case(list, Op::softmax_backward, log ? "log_7x13" : "7x13", "7 rows of 13");
      c.in("y", {7, 13}, Specials::Zeros, lo, hi);
      c.in("gy", {7, 13}, Specials::Zeros).grad();
      c.out("gx", {7, 13});
      c.call = [log](CallArgs& a) {
        a.backend.softmax_backward(a.num.mac, log, a.in("y"), a.in("gy"), a.out("gx"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::softmax_backward, log ? "log_views_300" : "views_300",
                         "rows of 300, y transposed, gy narrowed");
      c.in("y", {300, 3}, Specials::Zeros, lo, hi).t(0, 1);
      c.in("gy", {3, 310}, Specials::Zeros).narrow(1, 5, 300).grad();
      c.out("gx", {3, 300});
      c.call = [log](CallArgs& a) {
        a.backend.softmax_backward(a.num.mac, log, a.in("y"), a.in("gy"), a.out("gx"), a.key);
      };
    }
  }
  for (bool log : {false, true}) {
    Case& c = add_case(list, Op::softmax_backward, log ? "log_specials_6x5" : "specials_6x5",
                       "Inf, NaN, huge values");
    c.in("y", {6, 5}, Specials::All, log ? -12.0f : 0.0f, log ? 0.0f : 1.0f);
    c.in("gy", {6, 5}, Specials::All).grad();
    c.out("gx", {6, 5});
    c.call = [log](CallArgs& a) {
      a.backend.softmax_backward(a.num.mac, log, a.in("y"), a.in("gy"), a.out("gx"), a.key);
    };
  }
  {
    Case& c = add_case(list, Op::softmax_backward, "empty_0x4", "no rows");
    c.in("y", {0, 4});
    c.in("gy", {0, 4}).grad();
    c.out("gx", {0, 4});
    c.call = [](CallArgs& a) {
      a.backend.softmax_backward(a.num.mac, false, a.in("y"), a.in("gy"), a.out("gx"), a.key);
    };
  }
}

void loss_cases(CaseList& list) {
  constexpr int64_t kIgnore = -100;
  struct CE {
    const char* name;
    const char* note;
    int64_t N, C;
    float q_on, q_off;
    std::vector<float> targets;  // empty: seeded classes with row 2 ignored
    Specials sp;
    bool transposed;
  };
  const CE ces[] = {
      {"7x11", "7 rows of 11 classes, row 2 ignored", 7, 11, 1.0f, 0.0f, {}, Specials::Zeros, false},
      {"smoothing_5x9",
       "label smoothing 0.1: q_on 0.9 + 0.1/9, q_off 0.1/9",
       5,
       9,
       0.9f + 0.1f / 9,
       0.1f / 9,
       {},
       Specials::Zeros,
       false},
      {"transposed_6x10", "transposed logits", 6, 10, 1.0f, 0.0f, {}, Specials::Zeros, true},
      {"all_ignored",
       "every row ignored: 0 / 0",
       3,
       4,
       1.0f,
       0.0f,
       {-100, -100, -100},
       Specials::None,
       false},
      {"specials_8x5", "logits with Inf and NaN", 8, 5, 1.0f, 0.0f, {}, Specials::All, false},
      {"one_class", "C = 1", 4, 1, 1.0f, 0.0f, {0, 0, -100, 0}, Specials::None, false},
  };
  for (const CE& e : ces) {
    std::vector<float> targets = e.targets;
    if (targets.empty()) {
      targets = seeded_indices(path_hash(e.name), e.N, e.C);
      if (e.N > 2) targets[2] = static_cast<float>(kIgnore);
    }
    const float q_on = e.q_on, q_off = e.q_off;
    {
      Case& c = add_case(list, Op::cross_entropy_forward, e.name, e.note);
      if (e.transposed)
        c.in("logits", {e.C, e.N}, e.sp, -8.0f, 8.0f).t(0, 1);
      else
        c.in("logits", {e.N, e.C}, e.sp, -8.0f, 8.0f);
      c.in("targets", {e.N}).exact(targets);
      c.out("logp", {e.N, e.C});
      c.out("loss", {});
      c.call = [q_on, q_off](CallArgs& a) {
        a.backend.cross_entropy_forward(a.num.mac, a.in("logits"), a.in("targets"), kIgnore, q_on, q_off,
                                        a.out("logp"), a.out("loss"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::cross_entropy_backward, e.name, e.note);
      if (e.transposed)
        c.in("logp", {e.C, e.N}, e.sp, -12.0f, 0.0f).t(0, 1);
      else
        c.in("logp", {e.N, e.C}, e.sp, -12.0f, 0.0f);
      c.in("targets", {e.N}).exact(targets);
      c.in("gloss", {}, Specials::None, 0.5f, 3.0f).grad();
      c.out("glogits", {e.N, e.C});
      c.call = [q_on, q_off](CallArgs& a) {
        a.backend.cross_entropy_backward(a.num.f, a.in("logp"), a.in("targets"), kIgnore, q_on, q_off,
                                         a.in("gloss"), a.out("glogits"), a.key);
      };
    }
  }
  struct MS {
    const char* name;
    const char* note;
    Shape shape;
    Specials sp;
    bool views;
  };
  const MS mses[] = {
      {"5x7", "(5,7)", {5, 7}, Specials::Zeros, false},
      {"long_1001", "1001 elements (chunks, draws)", {1001}, Specials::Zeros, false},
      {"views_9x4", "transposed x, narrowed target", {9, 4}, Specials::Zeros, true},
      {"specials_33", "Inf and NaN", {33}, Specials::All, false},
      {"one", "one element", {1}, Specials::None, false},
  };
  for (const MS& m : mses) {
    {
      Case& c = add_case(list, Op::mse_forward, m.name, m.note);
      if (m.views) {
        c.in("x", {m.shape[1], m.shape[0]}, m.sp).t(0, 1);
        c.in("target", {m.shape[0], m.shape[1] + 3}, m.sp).narrow(1, 2, m.shape[1]);
      } else {
        c.in("x", m.shape, m.sp);
        c.in("target", m.shape, m.sp);
      }
      c.out("diff", m.shape);
      c.out("loss", {});
      c.call = [](CallArgs& a) {
        a.backend.mse_forward(a.num.mac, a.in("x"), a.in("target"), a.out("diff"), a.out("loss"), a.key);
      };
    }
    for (bool with_target : {false, true}) {
      Case& c = add_case(list, Op::mse_backward, std::string(m.name) + (with_target ? "_gtarget" : ""),
                         m.note + std::string(with_target ? ", with the target's gradient" : ""));
      if (m.views)
        c.in("diff", {m.shape[1], m.shape[0]}, m.sp).t(0, 1);
      else
        c.in("diff", m.shape, m.sp);
      c.in("gloss", {}, Specials::None, 0.25f, 2.0f).grad();
      c.out("gx", m.shape);
      if (with_target) c.out("gtarget", m.shape);
      c.call = [](CallArgs& a) {
        a.backend.mse_backward(a.num.f, a.in("diff"), a.in("gloss"), a.out("gx"), a.opt_out("gtarget"),
                               a.key);
      };
    }
  }
}

}  // namespace

void add_elementwise_cases(CaseList& list) {
  activation_cases(list);
  add_dropout_cases(list);
  softmax_cases(list);
  loss_cases(list);
}

}  // namespace emu::validate
