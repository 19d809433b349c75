// Cases of the recurrent family (core/backend_ops_recurrent.h): LSTM and GRU,
// forward and backward, in both directions, with and without step masks
// (packed sequences), optional operands present or absent. The gate functions
// are the policy's sigmoid and tanh (pwl under pwl-functions); the slopes
// tensor is always passed (the ops touch it only when a gate is pwl).
#include "tools/validate_case.h"

namespace emu::validate {
namespace {

struct Geometry {
  const char* name;
  const char* note;
  int64_t N, T, I, H;
  std::vector<int64_t> lengths;  // empty: no mask
  bool reverse, bias, views;
  Specials sp;
};

const Geometry kGeometries[] = {
    {"3x4_i5_h6", "N 3, T 4, I 5, H 6, bias, no mask", 3, 4, 5, 6, {}, false, true, false, Specials::Zeros},
    {"masked_reverse",
     "lengths 4, 2, 1, reverse direction, bias",
     3,
     4,
     5,
     6,
     {4, 2, 1},
     true,
     true,
     false,
     Specials::Zeros},
    {"masked_forward_no_bias",
     "lengths 5, 3, no bias",
     2,
     5,
     3,
     4,
     {5, 3},
     false,
     false,
     false,
     Specials::Zeros},
    {"views", "x and w_hh transposed views", 2, 3, 4, 5, {}, false, true, true, Specials::Zeros},
    {"n1_h1", "one sequence, one unit, one feature", 1, 3, 1, 1, {}, false, true, false, Specials::None},
    {"specials", "Inf, NaN, huge values", 2, 3, 3, 3, {}, false, true, false, Specials::All},
};

// x (N,T,I), w_ih (G*H, I), w_hh (G*H, H) and the optional bias / mask of a geometry.
void add_common(Case& c, const Geometry& g, int64_t gates, int64_t bias_width, bool with_x) {
  const int64_t GH = gates * g.H;
  if (with_x) {
    if (g.views)
      c.in("x", {g.N, g.I, g.T}, g.sp).t(1, 2);
    else
      c.in("x", {g.N, g.T, g.I}, g.sp);
  }
  c.in("w_ih", {GH, g.I}, g.sp, -0.5f, 0.5f).weight();
  if (g.views)
    c.in("w_hh", {g.H, GH}, g.sp, -0.5f, 0.5f).t(0, 1).weight().rows(ReadLayout{1, g.H, GH});
  else
    c.in("w_hh", {GH, g.H}, g.sp, -0.5f, 0.5f).weight();
  if (g.bias && with_x) c.in("bias", {bias_width}, g.sp).weight();
  if (!g.lengths.empty()) c.in("mask", {g.N, g.T}).exact(prefix_mask(g.N, g.T, g.lengths));
}

void lstm_cases(CaseList& list) {
  for (const Geometry& g : kGeometries) {
    const bool reverse = g.reverse;
    for (bool with_preact : {true, false}) {
      Case& c =
          add_case(list, Op::lstm_forward, std::string(g.name) + (with_preact ? "" : "_no_preact"), g.note);
      add_common(c, g, 4, 4 * g.H, true);
      c.in("h0", {g.N, g.H}, g.sp, -1.0f, 1.0f);
      c.in("c0", {g.N, g.H}, g.sp, -1.0f, 1.0f);
      c.out("y", {g.N, g.T, g.H}).out("h_n", {g.N, g.H}).out("c_n", {g.N, g.H});
      c.out("xh", {g.N, g.T, g.I + g.H}).out("saved", {g.N, g.T, 6 * g.H}).out("slopes", {g.N, g.T, 5 * g.H});
      if (with_preact) c.out("preact", {g.N, g.T, 4 * g.H});
      c.call = [reverse](CallArgs& a) {
        a.backend.lstm_forward(a.num.mac, a.num.gates, a.num.f, a.in("x"), a.in("h0"), a.in("c0"),
                               a.in("w_ih"), a.in("w_hh"), a.opt("bias"), a.opt("mask"), reverse, a.out("y"),
                               a.out("h_n"), a.out("c_n"), a.out("xh"), a.out("saved"), a.opt_out("slopes"),
                               a.opt_out("preact"), a.key);
      };
    }
    for (int mode = 0; mode < 2; ++mode) {
      // 0: every incoming and outgoing gradient; 1: only gh_n in, only the weight gradients out.
      Case& c =
          add_case(list, Op::lstm_backward, std::string(g.name) + (mode ? "_weights_only" : ""), g.note);
      add_common(c, g, 4, 4 * g.H, false);
      c.in("xh", {g.N, g.T, g.I + g.H}, g.sp);
      c.in("saved", {g.N, g.T, 6 * g.H}, g.sp, -1.0f, 1.0f);
      c.in("slopes", {g.N, g.T, 5 * g.H}, Specials::None, 0.0f, 1.0f);
      if (mode == 0) c.in("gy", {g.N, g.T, g.H}, g.sp).grad();
      c.in("gh_n", {g.N, g.H}, g.sp).grad();
      if (mode == 0) c.in("gc_n", {g.N, g.H}, g.sp).grad();
      if (mode == 0) c.out("dx", {g.N, g.T, g.I});
      c.out("dw_ih", {4 * g.H, g.I}).out("dw_hh", {4 * g.H, g.H});
      if (mode == 0) c.out("dbias", {4 * g.H});
      c.out("dh0", {g.N, g.H}).out("dc0", {g.N, g.H});
      c.call = [reverse](CallArgs& a) {
        a.backend.lstm_backward(a.num.mac, a.num.gates, a.in("w_ih"), a.in("w_hh"), a.in("xh"), a.in("saved"),
                                a.opt("slopes"), a.opt("gy"), a.opt("gh_n"), a.opt("gc_n"), a.opt("mask"),
                                reverse, a.opt_out("dx"), a.opt_out("dw_ih"), a.opt_out("dw_hh"),
                                a.opt_out("dbias"), a.out("dh0"), a.out("dc0"), a.key);
      };
    }
  }
}

void gru_cases(CaseList& list) {
  for (const Geometry& g : kGeometries) {
    const bool reverse = g.reverse;
    for (bool with_preact : {true, false}) {
      Case& c =
          add_case(list, Op::gru_forward, std::string(g.name) + (with_preact ? "" : "_no_preact"), g.note);
      add_common(c, g, 3, 4 * g.H, true);
      c.in("h0", {g.N, g.H}, g.sp, -1.0f, 1.0f);
      c.out("y", {g.N, g.T, g.H}).out("h_n", {g.N, g.H});
      c.out("xh", {g.N, g.T, g.I + g.H}).out("saved", {g.N, g.T, 5 * g.H}).out("slopes", {g.N, g.T, 3 * g.H});
      if (with_preact) c.out("preact", {g.N, g.T, 4 * g.H});
      c.call = [reverse](CallArgs& a) {
        a.backend.gru_forward(a.num.mac, a.num.gates, a.num.f, a.in("x"), a.in("h0"), a.in("w_ih"),
                              a.in("w_hh"), a.opt("bias"), a.opt("mask"), reverse, a.out("y"), a.out("h_n"),
                              a.out("xh"), a.out("saved"), a.opt_out("slopes"), a.opt_out("preact"), a.key);
      };
    }
    for (int mode = 0; mode < 2; ++mode) {
      Case& c = add_case(list, Op::gru_backward, std::string(g.name) + (mode ? "_weights_only" : ""), g.note);
      add_common(c, g, 3, 4 * g.H, false);
      c.in("xh", {g.N, g.T, g.I + g.H}, g.sp);
      c.in("saved", {g.N, g.T, 5 * g.H}, g.sp, -1.0f, 1.0f);
      c.in("slopes", {g.N, g.T, 3 * g.H}, Specials::None, 0.0f, 1.0f);
      if (mode == 0) c.in("gy", {g.N, g.T, g.H}, g.sp).grad();
      c.in("gh_n", {g.N, g.H}, g.sp).grad();
      if (mode == 0) c.out("dx", {g.N, g.T, g.I});
      c.out("dw_ih", {3 * g.H, g.I}).out("dw_hh", {3 * g.H, g.H});
      if (mode == 0) c.out("dbias", {4 * g.H});
      c.out("dh0", {g.N, g.H});
      c.call = [reverse](CallArgs& a) {
        a.backend.gru_backward(a.num.mac, a.num.gates, a.in("w_ih"), a.in("w_hh"), a.in("xh"), a.in("saved"),
                               a.opt("slopes"), a.opt("gy"), a.opt("gh_n"), a.opt("mask"), reverse,
                               a.opt_out("dx"), a.opt_out("dw_ih"), a.opt_out("dw_hh"), a.opt_out("dbias"),
                               a.out("dh0"), a.key);
      };
    }
  }
}

}  // namespace

void add_recurrent_cases(CaseList& list) {
  lstm_cases(list);
  gru_cases(list);
}

}  // namespace emu::validate
