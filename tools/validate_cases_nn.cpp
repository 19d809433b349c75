// Cases of the nn family (core/backend_ops_nn.h): convolutions forward and
// backward over several geometries (strides, padding, dilation, groups, the
// conv1d shape), channel sums, max / average / adaptive pooling and batch
// normalisation.
#include <cmath>

#include "tools/validate_case.h"

namespace emu::validate {
namespace {

int64_t conv_out(int64_t in, int k, int stride, int pad, int dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

struct ConvGeometry {
  const char* name;
  const char* note;
  int64_t N, C_in, H, W, C_out, KH, KW;
  Conv2dParams cp;
  bool bias;
  Specials sp;
  int64_t OH() const { return conv_out(H, static_cast<int>(KH), cp.stride_h, cp.pad_h, cp.dilation_h); }
  int64_t OW() const { return conv_out(W, static_cast<int>(KW), cp.stride_w, cp.pad_w, cp.dilation_w); }
};

Conv2dParams conv_params(int sh, int sw, int ph, int pw, int dh, int dw, int groups) {
  Conv2dParams p;
  p.stride_h = sh;
  p.stride_w = sw;
  p.pad_h = ph;
  p.pad_w = pw;
  p.dilation_h = dh;
  p.dilation_w = dw;
  p.groups = groups;
  return p;
}

void conv_cases(CaseList& list) {
  const ConvGeometry geometries[] = {
      {"3x3_s2_p1_bias", "(2,3,9,11) * (4,3,3,3), stride 2, padding 1, bias", 2, 3, 9, 11, 4, 3, 3,
       conv_params(2, 2, 1, 1, 1, 1, 1), true, Specials::Zeros},
      {"grouped_dilated", "groups 2, dilation 2x1, padding 2x1: (1,4,8,7) * (6,2,3,2)", 1, 4, 8, 7, 6, 3, 2,
       conv_params(1, 1, 2, 1, 2, 1, 2), false, Specials::Zeros},
      {"conv1d_shape", "conv1d as (N,C,1,L): (2,3,1,17) * (5,3,1,4), padding 0x2, bias", 2, 3, 1, 17, 5, 1, 4,
       conv_params(1, 1, 0, 2, 1, 1, 1), true, Specials::Zeros},
      {"1x1_s3", "1x1 kernel, stride 3: (3,5,7,8) * (7,5,1,1)", 3, 5, 7, 8, 7, 1, 1,
       conv_params(3, 3, 0, 0, 1, 1, 1), false, Specials::Zeros},
      {"specials", "Inf, NaN and huge values: (1,2,5,6) * (3,2,2,3), bias", 1, 2, 5, 6, 3, 2, 3,
       conv_params(1, 2, 1, 1, 1, 1, 1), true, Specials::All},
      {"empty_batch", "N = 0", 0, 2, 5, 5, 3, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1), true, Specials::None},
      // The tile kernel's blocks are 128 x 128 outputs for the fast paths (backends/cuda/ops/gemm_tile.h):
      // 130 output channels and 130 pixels span two of each way, K = 18 a whole k tile and a partial one.
      {"tiles_130x130", "(1,2,10,13) * (130,2,3,3), padding 1, bias: several output tiles", 1, 2, 10, 13, 130,
       3, 3, conv_params(1, 1, 1, 1, 1, 1, 1), true, Specials::Finite},
  };
  for (const ConvGeometry& g : geometries) {
    const Shape x{g.N, g.C_in, g.H, g.W}, w{g.C_out, g.C_in / g.cp.groups, g.KH, g.KW},
        y{g.N, g.C_out, g.OH(), g.OW()};
    const Conv2dParams cp = g.cp;
    const ReadLayout wl{g.C_out, g.C_in / g.cp.groups * g.KH * g.KW, 1};  // rows: one output channel's taps
    {
      Case& c = add_case(list, Op::conv2d_forward, g.name, g.note);
      c.in("x", x, g.sp);
      c.in("w", w, g.sp).weight().rows(wl);
      if (g.bias) c.in("bias", {g.C_out}, g.sp).weight();
      c.out("y", y);
      c.call = [cp](CallArgs& a) {
        a.backend.conv2d_forward(a.num.mac, cp, a.in("x"), a.in("w"), a.opt("bias"), a.out("y"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::conv2d_grad_input, g.name, g.note);
      c.in("gy", y, g.sp).grad();
      c.in("w", w, g.sp).weight().rows(wl);
      c.out("gx", x);
      c.call = [cp](CallArgs& a) {
        a.backend.conv2d_grad_input(a.num.mac, cp, a.in("gy"), a.in("w"), a.out("gx"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::conv2d_grad_weight, g.name, g.note);
      c.in("x", x, g.sp);
      c.in("gy", y, g.sp).grad();
      c.out("gw", w);
      c.call = [cp](CallArgs& a) {
        a.backend.conv2d_grad_weight(a.num.mac, cp, a.in("x"), a.in("gy"), a.out("gw"), a.key);
      };
    }
  }
  {
    // Channels-last storage: x is a (N,H,W,C) tensor seen as (N,C,H,W).
    const Conv2dParams cp = conv_params(1, 1, 1, 0, 1, 1, 1);
    Case& f = add_case(list, Op::conv2d_forward, "channels_last_view", "x a permuted (2,6,5,3) view");
    f.in("x", {2, 3, 5, 6}, Specials::Zeros).t(1, 3);  // (2,6,5,3) seen as (N=2, C=6, H=5, W=3)
    f.in("w", {4, 6, 3, 2}, Specials::Zeros).weight();
    f.out("y", {2, 4, 5, 2});
    f.call = [cp](CallArgs& a) {
      a.backend.conv2d_forward(a.num.mac, cp, a.in("x"), a.in("w"), nullptr, a.out("y"), a.key);
    };
    Case& i = add_case(list, Op::conv2d_grad_input, "transposed_gy", "gy a view with H and W swapped");
    i.in("gy", {2, 4, 2, 5}, Specials::Zeros).t(2, 3).grad();
    i.in("w", {4, 6, 3, 2}, Specials::Zeros).weight();
    i.out("gx", {2, 6, 5, 3});
    i.call = [cp](CallArgs& a) {
      a.backend.conv2d_grad_input(a.num.mac, cp, a.in("gy"), a.in("w"), a.out("gx"), a.key);
    };
    Case& g = add_case(list, Op::conv2d_grad_weight, "transposed_gy", "gy a view with H and W swapped");
    g.in("x", {2, 6, 5, 3}, Specials::Zeros);
    g.in("gy", {2, 4, 2, 5}, Specials::Zeros).t(2, 3).grad();
    g.out("gw", {4, 6, 3, 2});
    g.call = [cp](CallArgs& a) {
      a.backend.conv2d_grad_weight(a.num.mac, cp, a.in("x"), a.in("gy"), a.out("gw"), a.key);
    };
  }
  auto sum = [](CallArgs& a) { a.backend.channel_sum(a.num.sum, a.in("x"), a.out("y"), a.key); };
  {
    Case& c = add_case(list, Op::channel_sum, "3x5x7", "(N,C,S) = (3,5,7)");
    c.in("x", {3, 5, 7}, Specials::Zeros);
    c.out("y", {5});
    c.call = sum;
  }
  {
    Case& c = add_case(list, Op::channel_sum, "long_2x3x200", "400 terms per channel (chunks)");
    c.in("x", {2, 3, 200}, Specials::Zeros);
    c.out("y", {3});
    c.call = sum;
  }
  {
    Case& c = add_case(list, Op::channel_sum, "transposed", "x a (4,9,6) seen as (4,6,9)");
    c.in("x", {4, 9, 6}, Specials::Zeros).t(1, 2);
    c.out("y", {6});
    c.call = sum;
  }
  {
    Case& c = add_case(list, Op::channel_sum, "specials", "Inf, NaN, huge values");
    c.in("x", {2, 4, 5}, Specials::All);
    c.out("y", {4});
    c.call = sum;
  }
  {
    Case& c = add_case(list, Op::channel_sum, "empty_batch", "N = 0: every channel R(+0)");
    c.in("x", {0, 4, 3});
    c.out("y", {4});
    c.call = sum;
  }
}

struct PoolGeometry {
  const char* name;
  const char* note;
  Shape x;
  Pool2dParams pp;
  Specials sp;
  bool transposed;  // x seen through a transpose of H and W
  Shape y() const {
    return {x[0], x[1], (x[2] + 2 * pp.pad_h - pp.kernel_h) / pp.stride_h + 1,
            (x[3] + 2 * pp.pad_w - pp.kernel_w) / pp.stride_w + 1};
  }
};

Pool2dParams pool_params(int kh, int kw, int sh, int sw, int ph, int pw) {
  Pool2dParams p;
  p.kernel_h = kh;
  p.kernel_w = kw;
  p.stride_h = sh;
  p.stride_w = sw;
  p.pad_h = ph;
  p.pad_w = pw;
  return p;
}

// Argmax of max_pool2d_forward on the CPU reference in fp32: valid indices for
// the backward (each one inside its window).
std::vector<float> pool_argmax(const Pool2dParams& pp, const Shape& x, const Shape& y, uint64_t seed) {
  Tensor xt = Tensor::from_vector(x, seeded_values(seed, shape_numel(x), Specials::None, -4.0f, 4.0f));
  Tensor yt = Tensor::zeros(y), am = Tensor::zeros(y);
  default_cpu_backend().max_pool2d_forward(Format{}, pp, xt, yt, am, DrawKey{});
  return am.to_vector();
}

void pool_cases(CaseList& list) {
  const PoolGeometry geometries[] = {
      {"3x3_s2_p1",
       "(2,3,9,10), kernel 3, stride 2, padding 1",
       {2, 3, 9, 10},
       pool_params(3, 3, 2, 2, 1, 1),
       Specials::Zeros,
       false},
      {"2x2_s2",
       "(1,2,8,7), kernel 2, stride 2 (a column left over)",
       {1, 2, 8, 7},
       pool_params(2, 2, 2, 2, 0, 0),
       Specials::Zeros,
       false},
      {"3x2_s1_overlap",
       "(2,2,6,5), kernel 3x2, stride 1 (overlapping windows)",
       {2, 2, 6, 5},
       pool_params(3, 2, 1, 1, 1, 1),
       Specials::Zeros,
       false},
      {"specials",
       "Inf, NaN (the first NaN wins), huge values",
       {1, 3, 7, 7},
       pool_params(3, 3, 2, 2, 1, 1),
       Specials::All,
       false},
      {"transposed_input",
       "x a (2,3,11,8) with H and W swapped",
       {2, 3, 8, 11},
       pool_params(2, 3, 2, 2, 1, 1),
       Specials::Zeros,
       true},
  };
  for (const PoolGeometry& g : geometries) {
    const Pool2dParams pp = g.pp;
    const Shape y = g.y();
    auto add_x = [&](Case& c) {
      if (g.transposed)
        c.in("x", {g.x[0], g.x[1], g.x[3], g.x[2]}, g.sp, -4.0f, 4.0f).t(2, 3);
      else
        c.in("x", g.x, g.sp, -4.0f, 4.0f);
    };
    auto add_gy = [&](Case& c) {
      if (g.transposed)
        c.in("gy", {y[0], y[1], y[3], y[2]}, g.sp).t(2, 3).grad();
      else
        c.in("gy", y, g.sp).grad();
    };
    {
      Case& c = add_case(list, Op::max_pool2d_forward, g.name, g.note);
      add_x(c);
      c.out("y", y);
      c.out("argmax", y, false);
      c.call = [pp](CallArgs& a) {
        a.backend.max_pool2d_forward(a.num.f, pp, a.in("x"), a.out("y"), a.out("argmax"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::max_pool2d_backward, g.name, g.note);
      add_gy(c);
      c.in("argmax", y).exact(pool_argmax(pp, g.x, y, path_hash(g.name)));
      c.out("gx", g.x);
      c.call = [pp](CallArgs& a) {
        a.backend.max_pool2d_backward(a.num.mac, pp, a.in("gy"), a.in("argmax"), a.out("gx"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::avg_pool2d_forward, g.name, g.note);
      add_x(c);
      c.out("y", y);
      c.call = [pp](CallArgs& a) {
        a.backend.avg_pool2d_forward(a.num.mac, pp, a.in("x"), a.out("y"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::avg_pool2d_backward, g.name, g.note);
      add_gy(c);
      c.out("gx", g.x);
      c.call = [pp](CallArgs& a) {
        a.backend.avg_pool2d_backward(a.num.mac, pp, a.in("gy"), a.out("gx"), a.key);
      };
    }
  }
  {
    // Ties everywhere: small integers, so the first index of a window must win.
    const Pool2dParams pp = pool_params(3, 3, 2, 2, 1, 1);
    Case& c =
        add_case(list, Op::max_pool2d_forward, "ties", "values from {-1, 0, 1}: ties to the first index");
    std::vector<float> v = seeded_indices(0x74696573ull, 2 * 9 * 9, 3);
    for (float& e : v) e -= 1.0f;
    c.in("x", {1, 2, 9, 9}, Specials::None).set(v);
    c.out("y", {1, 2, 5, 5});
    c.out("argmax", {1, 2, 5, 5}, false);
    c.call = [pp](CallArgs& a) {
      a.backend.max_pool2d_forward(a.num.f, pp, a.in("x"), a.out("y"), a.out("argmax"), a.key);
    };
  }
  struct Adaptive {
    const char* name;
    const char* note;
    Shape x, y;
    Specials sp;
  };
  const Adaptive adaptive[] = {
      {"7x9_to_3x4", "(2,3,7,9) -> (3,4): overlapping windows", {2, 3, 7, 9}, {2, 3, 3, 4}, Specials::Zeros},
      {"global_5x6", "(2,4,5,6) -> (1,1): global average", {2, 4, 5, 6}, {2, 4, 1, 1}, Specials::Zeros},
      {"upsample_3x2_to_5x4",
       "(1,2,3,2) -> (5,4): more outputs than inputs",
       {1, 2, 3, 2},
       {1, 2, 5, 4},
       Specials::Zeros},
      {"specials", "Inf and NaN", {1, 2, 6, 6}, {1, 2, 4, 4}, Specials::All},
  };
  for (const Adaptive& g : adaptive) {
    {
      Case& c = add_case(list, Op::adaptive_avg_pool2d_forward, g.name, g.note);
      c.in("x", g.x, g.sp);
      c.out("y", g.y);
      c.call = [](CallArgs& a) {
        a.backend.adaptive_avg_pool2d_forward(a.num.mac, a.in("x"), a.out("y"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::adaptive_avg_pool2d_backward, g.name, g.note);
      c.in("gy", g.y, g.sp).grad();
      c.out("gx", g.x);
      c.call = [](CallArgs& a) {
        a.backend.adaptive_avg_pool2d_backward(a.num.mac, a.in("gy"), a.out("gx"), a.key);
      };
    }
  }
  {
    Case& c =
        add_case(list, Op::adaptive_avg_pool2d_backward, "transposed_gy", "gy a (1,3,3,2) seen as (1,3,2,3)");
    c.in("gy", {1, 3, 3, 2}, Specials::Zeros).t(2, 3).grad();
    c.out("gx", {1, 3, 5, 8});
    c.call = [](CallArgs& a) {
      a.backend.adaptive_avg_pool2d_backward(a.num.mac, a.in("gy"), a.out("gx"), a.key);
    };
  }
  {
    Case& c = add_case(list, Op::adaptive_avg_pool2d_forward, "transposed_input",
                       "x a (1,3,8,5) seen as (1,3,5,8)");
    c.in("x", {1, 3, 8, 5}, Specials::Zeros).t(2, 3);
    c.out("y", {1, 3, 2, 3});
    c.call = [](CallArgs& a) {
      a.backend.adaptive_avg_pool2d_forward(a.num.mac, a.in("x"), a.out("y"), a.key);
    };
  }
}

void batch_norm_cases(CaseList& list) {
  struct BN {
    const char* name;
    const char* note;
    Shape x;
    Specials sp;
    bool transposed;  // x a (N,S,C) tensor seen as (N,C,S)
  };
  const BN shapes[] = {
      {"3x5x7", "(N,C,S) = (3,5,7)", {3, 5, 7}, Specials::Zeros, false},
      {"m1", "one value per channel: var_unbiased is NaN", {1, 4, 1}, Specials::None, false},
      {"long_2x3x150", "300 values per channel (chunks)", {2, 3, 150}, Specials::Zeros, false},
      {"transposed", "x a (2,9,4) seen as (2,4,9)", {2, 4, 9}, Specials::Zeros, true},
      {"specials", "Inf, NaN, huge values", {2, 3, 6}, Specials::All, false},
  };
  for (const BN& b : shapes) {
    const int64_t C = b.x[1];
    auto add_x = [&](Case& c, const char* name, Role role) {
      InputSpec& s =
          b.transposed ? c.in(name, {b.x[0], b.x[2], b.x[1]}, b.sp).t(1, 2) : c.in(name, b.x, b.sp);
      s.role = role;
    };
    {
      Case& c = add_case(list, Op::batch_norm_stats, b.name, b.note);
      add_x(c, "x", Role::Data);
      c.out("mean", {C}).out("var", {C}).out("var_unbiased", {C});
      c.call = [](CallArgs& a) {
        a.backend.batch_norm_stats(a.num.mac, a.in("x"), a.out("mean"), a.out("var"), a.out("var_unbiased"),
                                   a.key);
      };
    }
    for (int affine = 0; affine < 2; ++affine) {
      Case& c = add_case(list, Op::batch_norm_normalize, std::string(b.name) + (affine ? "_affine" : ""),
                         b.note + std::string(affine ? ", gamma and beta" : ""));
      add_x(c, "x", Role::Data);
      c.in("mean", {C}, Specials::Zeros, -1.0f, 1.0f);
      c.in("var", {C}, Specials::None, 0.0f, 3.0f);
      if (affine) {
        c.in("gamma", {C}, b.sp).weight();
        c.in("beta", {C}, b.sp).weight();
      }
      c.out("y", b.x).out("xhat", b.x).out("invstd", {C});
      c.call = [](CallArgs& a) {
        a.backend.batch_norm_normalize(a.num.f, 1e-5f, a.in("x"), a.in("mean"), a.in("var"), a.opt("gamma"),
                                       a.opt("beta"), a.out("y"), a.out("xhat"), a.out("invstd"), a.key);
      };
    }
    for (int mode = 0; mode < 3; ++mode) {
      // 0: batch statistics, gamma, every gradient; 1: running statistics, no
      // gamma, every gradient; 2: batch statistics, only gx.
      static const char* const suffix[] = {"_batch", "_running", "_gx_only"};
      Case& c = add_case(list, Op::batch_norm_backward, std::string(b.name) + suffix[mode], b.note);
      add_x(c, "gy", Role::Grad);
      add_x(c, "xhat", Role::Data);
      c.in("invstd", {C}, Specials::None, 0.1f, 4.0f);
      if (mode == 0) c.in("gamma", {C}, b.sp).weight();
      c.out("gx", b.x);
      if (mode != 2) c.out("ggamma", {C}).out("gbeta", {C});
      const bool batch_stats = mode != 1;
      c.call = [batch_stats](CallArgs& a) {
        a.backend.batch_norm_backward(a.num.mac, batch_stats, a.in("gy"), a.in("xhat"), a.in("invstd"),
                                      a.opt("gamma"), a.opt_out("gx"), a.opt_out("ggamma"),
                                      a.opt_out("gbeta"), a.key);
      };
    }
  }
  struct Running {
    const char* name;
    const char* note;
    int64_t C;
    float momentum;
    Specials sp;
  };
  const Running runs[] = {
      {"c7_m0.1", "7 channels, momentum 0.1", 7, 0.1f, Specials::Zeros},
      {"c33_m0.01", "33 channels, momentum 0.01", 33, 0.01f, Specials::Zeros},
      {"specials", "Inf and NaN statistics", 12, 0.1f, Specials::All},
  };
  {
    Case& c = add_case(list, Op::batch_norm_update_running, "narrowed_stats",
                       "mean and var_unbiased narrowed views");
    c.in("mean", {15}, Specials::Zeros).narrow(0, 3, 9);
    c.in("var_unbiased", {12}, Specials::Zeros, 0.0f, 3.0f).narrow(0, 2, 9);
    c.in("running_mean", {9}, Specials::Zeros).io();
    c.in("running_var", {9}, Specials::Zeros, 0.0f, 3.0f).io();
    c.call = [](CallArgs& a) {
      a.backend.batch_norm_update_running(a.num.f, 0.1f, a.in("mean"), a.in("var_unbiased"),
                                          a.in("running_mean"), a.in("running_var"), a.key);
    };
  }
  for (const Running& r : runs) {
    Case& c = add_case(list, Op::batch_norm_update_running, r.name, r.note);
    c.in("mean", {r.C}, r.sp);
    c.in("var_unbiased", {r.C}, r.sp, 0.0f, 3.0f);
    c.in("running_mean", {r.C}, r.sp).io();
    c.in("running_var", {r.C}, r.sp, 0.0f, 3.0f).io();
    const float m = r.momentum;
    c.call = [m](CallArgs& a) {
      a.backend.batch_norm_update_running(a.num.f, m, a.in("mean"), a.in("var_unbiased"),
                                          a.in("running_mean"), a.in("running_var"), a.key);
    };
  }
}

}  // namespace

void add_nn_cases(CaseList& list) {
  conv_cases(list);
  pool_cases(list);
  batch_norm_cases(list);
}

}  // namespace emu::validate
