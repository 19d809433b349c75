// Cases of the attention family (core/backend_ops_attention.h): layer
// normalisation forward and backward, the per-head products of multi-head
// attention, and the masked softmax (causal, key padding, fully masked rows).
#include <cmath>

#include "tools/validate_case.h"

namespace emu::validate {
namespace {

void layer_norm_cases(CaseList& list) {
  struct L {
    const char* name;
    const char* note;
    int64_t R, D;
    Specials sp;
    bool transposed;
  };
  const L shapes[] = {
      {"7x13", "7 rows of 13", 7, 13, Specials::Zeros, false},
      {"2x300", "long rows (chunks)", 2, 300, Specials::Zeros, false},
      {"d1", "D = 1: var 0, invstd = rsqrt(eps)", 5, 1, Specials::None, false},
      {"transposed_9x11", "x a transposed (11,9)", 9, 11, Specials::Zeros, true},
      {"specials_4x17", "Inf, NaN, huge values", 4, 17, Specials::All, false},
      {"empty", "no rows", 0, 6, Specials::None, false},
  };
  for (const L& s : shapes) {
    auto add_rows = [&](Case& c, const char* name) -> InputSpec& {
      return s.transposed ? c.in(name, {s.D, s.R}, s.sp).t(0, 1) : c.in(name, {s.R, s.D}, s.sp);
    };
    for (int affine = 0; affine < 2; ++affine) {
      Case& c = add_case(list, Op::layer_norm_forward, std::string(s.name) + (affine ? "_affine" : ""),
                         s.note + std::string(affine ? ", gamma and beta" : ""));
      add_rows(c, "x");
      if (affine) {
        c.in("gamma", {s.D}, s.sp).weight();
        c.in("beta", {s.D}, s.sp).weight();
      }
      c.out("y", {s.R, s.D}).out("xhat", {s.R, s.D}).out("invstd", {s.R});
      c.call = [](CallArgs& a) {
        a.backend.layer_norm_forward(a.num.mac, 1e-5f, a.in("x"), a.opt("gamma"), a.opt("beta"), a.out("y"),
                                     a.out("xhat"), a.out("invstd"), a.key);
      };
    }
    for (int mode = 0; mode < 3; ++mode) {
      // 0: gamma and every gradient; 1: no gamma; 2: gamma, only gx.
      static const char* const suffix[] = {"_gamma", "", "_gx_only"};
      Case& c = add_case(list, Op::layer_norm_backward, std::string(s.name) + suffix[mode], s.note);
      add_rows(c, "gy").grad();
      add_rows(c, "xhat");
      c.in("invstd", {s.R}, Specials::None, 0.1f, 4.0f);
      if (mode != 1) c.in("gamma", {s.D}, s.sp).weight();
      c.out("gx", {s.R, s.D});
      if (mode != 2) c.out("ggamma", {s.D}).out("gbeta", {s.D});
      c.call = [](CallArgs& a) {
        a.backend.layer_norm_backward(a.num.mac, a.in("gy"), a.in("xhat"), a.in("invstd"), a.opt("gamma"),
                                      a.opt_out("gx"), a.opt_out("ggamma"), a.opt_out("gbeta"), a.key);
      };
    }
  }
}

struct Heads {
  const char* name;
  const char* note;
  int64_t N, T, S, H, D;
  Specials sp;
  bool views;  // the (N,L,E) operand narrowed out of a wider (N,L,E+3)
  int64_t E() const { return H * D; }
};

const Heads kHeads[] = {
    {"2x5x7_h3d4", "N 2, T 5, S 7, 3 heads of 4", 2, 5, 7, 3, 4, Specials::Zeros, false},
    {"self_h1d33", "N 1, T = S = 6, one head of 33 (chunks)", 1, 6, 6, 1, 33, Specials::Zeros, false},
    {"views_h2d3", "operands narrowed out of wider tensors", 2, 4, 3, 2, 3, Specials::Zeros, true},
    {"specials_h2d5", "Inf, NaN, huge values", 1, 3, 4, 2, 5, Specials::All, false},
    {"t0", "no queries", 2, 0, 5, 2, 2, Specials::None, false},
};

void product_cases(CaseList& list) {
  for (const Heads& h : kHeads) {
    const int64_t heads = h.H, E = h.E();
    auto add_features = [&](Case& c, const char* name, int64_t L, Role role) {
      InputSpec& s =
          h.views ? c.in(name, {h.N, L, E + 3}, h.sp).narrow(2, 1, E) : c.in(name, {h.N, L, E}, h.sp);
      s.role = role;
    };
    {
      Case& c = add_case(list, Op::attention_scores, h.name, h.note);
      add_features(c, "x", h.T, Role::Data);
      add_features(c, "y", h.S, Role::Weight);
      c.out("s", {h.N, h.H, h.T, h.S});
      c.call = [heads](CallArgs& a) {
        a.backend.attention_scores(a.num.mac, heads, a.in("x"), a.in("y"), a.out("s"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::attention_context, h.name, h.note);
      c.in("a", {h.N, h.H, h.T, h.S}, h.sp, 0.0f, 1.0f);
      add_features(c, "y", h.S, Role::Weight);
      c.out("c", {h.N, h.T, E});
      c.call = [heads](CallArgs& a) {
        a.backend.attention_context(a.num.mac, heads, a.in("a"), a.in("y"), a.out("c"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::attention_context_transposed, h.name, h.note);
      c.in("a", {h.N, h.H, h.T, h.S}, h.sp, 0.0f, 1.0f);
      add_features(c, "x", h.T, Role::Weight);
      c.out("c", {h.N, h.S, E});
      c.call = [heads](CallArgs& a) {
        a.backend.attention_context_transposed(a.num.mac, heads, a.in("a"), a.in("x"), a.out("c"), a.key);
      };
    }
  }
}

void masked_softmax_cases(CaseList& list) {
  struct M {
    const char* name;
    const char* note;
    int64_t N, H, T, S;
    bool causal;
    std::vector<int64_t> lengths;  // key padding: lengths[n] valid keys; empty: none
    Specials sp;
    bool transposed;  // scores seen through a transpose of T and S
  };
  const M shapes[] = {
      {"causal_2x3x5x5", "causal self-attention", 2, 3, 5, 5, true, {}, Specials::Zeros, false},
      {"padding_2x2x4x7",
       "key padding: 7 and 3 valid keys",
       2,
       2,
       4,
       7,
       false,
       {7, 3},
       Specials::Zeros,
       false},
      {"fully_masked_rows",
       "causal and padding with 0 valid keys: all-masked rows give +0",
       2,
       1,
       4,
       4,
       true,
       {4, 0},
       Specials::Zeros,
       false},
      {"long_1x1x2x300", "300 keys (chunks)", 1, 1, 2, 300, false, {}, Specials::Zeros, false},
      {"transposed_scores", "scores a transposed view, causal", 1, 2, 6, 6, true, {}, Specials::Zeros, true},
      {"specials", "Inf, NaN, huge scores", 1, 2, 3, 6, false, {5}, Specials::All, false},
  };
  const float scale = 0.35355339f;  // 1/sqrt(8)
  for (const M& m : shapes) {
    const bool causal = m.causal;
    auto add_scores = [&](Case& c, const char* name, float lo, float hi) -> InputSpec& {
      return m.transposed ? c.in(name, {m.N, m.H, m.S, m.T}, m.sp, lo, hi).t(2, 3)
                          : c.in(name, {m.N, m.H, m.T, m.S}, m.sp, lo, hi);
    };
    auto add_padding = [&](Case& c) {
      if (m.lengths.empty()) return;
      std::vector<float> v = prefix_mask(m.N, m.S, m.lengths);
      for (float& e : v) e = e != 0.0f ? 0.0f : 1.0f;  // nonzero = masked
      c.in("key_padding", {m.N, m.S}).exact(v);
    };
    {
      Case& c = add_case(list, Op::attention_softmax_forward, m.name, m.note);
      add_scores(c, "s", -8.0f, 8.0f);
      add_padding(c);
      c.out("probs", {m.N, m.H, m.T, m.S});
      c.call = [causal, scale](CallArgs& a) {
        a.backend.attention_softmax_forward(a.num.mac, scale, causal, a.in("s"), a.opt("key_padding"),
                                            a.out("probs"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::attention_softmax_forward_fn, m.name, m.note);
      add_scores(c, "s", -8.0f, 8.0f);
      add_padding(c);
      c.out("probs", {m.N, m.H, m.T, m.S});
      c.call = [causal, scale](CallArgs& a) {
        a.backend.attention_softmax_forward_fn(a.num.mac, a.num.function(Function::SoftmaxExp), scale, causal,
                                               a.in("s"), a.opt("key_padding"), a.out("probs"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::attention_softmax_backward, m.name, m.note);
      add_scores(c, "probs", 0.0f, 1.0f);
      add_scores(c, "gprobs", -2.0f, 2.0f).grad();
      add_padding(c);
      c.out("gs", {m.N, m.H, m.T, m.S});
      c.call = [causal, scale](CallArgs& a) {
        a.backend.attention_softmax_backward(a.num.mac, scale, causal, a.in("probs"), a.in("gprobs"),
                                             a.opt("key_padding"), a.out("gs"), a.key);
      };
    }
  }
}

}  // namespace

void add_attention_cases(CaseList& list) {
  layer_norm_cases(list);
  product_cases(list);
  masked_softmax_cases(list);
}

}  // namespace emu::validate
