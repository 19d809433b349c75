// Cases of the dense ops (quantize, gemm; core/backend_ops_dense.h), of the
// block reads (quantize_blocks; core/backend_ops_blocks.h) and of the N:M mask
// ops (nm_mask, apply_mask; core/backend_ops_sparsity.h). Sizes are odd and not
// multiples of any tile; views are transposed or narrowed where the op takes
// any view.
#include <cmath>
#include <limits>
#include <vector>

#include "core/draw_key.h"
#include "numerics/format_spec.h"
#include "tools/validate_case.h"

namespace emu::validate {
namespace {

void quantize_cases(CaseList& list) {
  auto call = [](CallArgs& a) { a.backend.quantize(a.num.f, a.in("x"), a.out("y"), a.key); };
  {
    Case& c = add_case(list, Op::quantize, "contiguous_4099", "4099 elements with every special value");
    c.in("x", {4099});
    c.out("y", {4099});
    c.call = call;
  }
  {
    Case& c = add_case(list, Op::quantize, "wide_range", "values in +-1e6 (saturation, overflow, wrap)");
    c.in("x", {517}, Specials::All, -1.0e6f, 1.0e6f);
    c.out("y", {517});
    c.call = call;
  }
  {
    Case& c = add_case(list, Op::quantize, "transposed_17x33", "a transposed input");
    c.in("x", {33, 17}).t(0, 1);
    c.out("y", {17, 33});
    c.call = call;
  }
  {
    Case& c = add_case(list, Op::quantize, "in_place", "y is x");
    c.in("x", {301}).io();
    c.call = [](CallArgs& a) { a.backend.quantize(a.num.f, a.in("x"), a.in("x"), a.key); };
  }
  {
    Case& c = add_case(list, Op::quantize, "strided_output", "into columns 2..8 of a (9,12): the rest stays");
    c.in("x", {9, 7});
    c.in("y", {9, 12}, Specials::None).narrow(1, 2, 7).io();
    c.call = [](CallArgs& a) { a.backend.quantize(a.num.f, a.in("x"), a.in("y"), a.key); };
  }
  {
    Case& c = add_case(list, Op::quantize, "empty", "no elements");
    c.in("x", {0, 4});
    c.out("y", {0, 4});
    c.call = call;
  }
}

void gemm_cases(CaseList& list) {
  struct G {
    const char* name;
    const char* note;
    int64_t M, N, K;
    bool bias;
    Specials sp;
  };
  const G sizes[] = {
      {"17x33x29_bias", "M 17, N 33, K 29 with a bias", 17, 33, 29, true, Specials::Zeros},
      {"1x1x1", "one product", 1, 1, 1, false, Specials::None},
      {"64x64x64", "a full tile's size", 64, 64, 64, false, Specials::Zeros},
      {"5x3x300_bias", "a long K (chunk boundaries, many draws)", 5, 3, 300, true, Specials::Zeros},
      {"k0_bias", "K = 0: every output is R(bias)", 3, 5, 0, true, Specials::None},
      {"k0", "K = 0 without bias: R(+0)", 2, 4, 0, false, Specials::None},
      {"m0", "M = 0: nothing to compute", 0, 7, 5, true, Specials::None},
      {"specials_9x11x13", "Inf, NaN, huge and subnormal operands", 9, 11, 13, true, Specials::All},
      {"overflow_7x6x31", "operands up to 3e38: overflow of every accumulator", 7, 6, 31, false,
       Specials::Finite},
      // The tile kernel's blocks (backends/cuda/ops/gemm_tile.h): 128 x 128 outputs (fast paths),
      // 64 x 64, 32 x 32; k tiles of 16. Just over a block each way, K small: every policy runs
      // these on the host executor, where the definition's path costs hundreds of instructions a
      // term.
      {"tiles_130x129x20", "several output tiles each way, a whole and a partial k tile, subnormal products",
       130, 129, 20, false, Specials::Zeros},
      {"tiles_129x130x32_bias", "several output tiles, whole k tiles, huge operands (the checked step)", 129,
       130, 32, true, Specials::Finite},
  };
  for (const G& g : sizes) {
    Case& c = add_case(list, Op::gemm, g.name, g.note);
    c.in("a", {g.M, g.K}, g.sp);
    c.in("b", {g.K, g.N}, g.sp).weight().rows(ReadLayout{1, g.K, g.N});
    if (g.bias) c.in("bias", {g.N}, g.sp).weight();
    c.out("c", {g.M, g.N});
    c.call = [](CallArgs& a) {
      a.backend.gemm(a.num.mac, a.in("a"), a.in("b"), a.opt("bias"), a.out("c"), a.key);
    };
  }
  {
    Case& c =
        add_case(list, Op::gemm, "transposed_a_narrowed_b", "a (17,29) as a transposed (29,17), b narrowed");
    c.in("a", {29, 17}, Specials::Zeros).t(0, 1).rows(ReadLayout{1, 29, 17});
    c.in("b", {29, 40}, Specials::Zeros).narrow(1, 4, 33).weight().rows(ReadLayout{1, 29, 40});
    c.in("bias", {33}, Specials::Zeros).weight();
    c.out("c", {17, 33});
    c.call = [](CallArgs& a) {
      a.backend.gemm(a.num.mac, a.in("a"), a.in("b"), a.opt("bias"), a.out("c"), a.key);
    };
  }
  {
    // Operands without specials except one Inf in a (row 3, k 21: the second k tile) that meets a
    // zero of b (k 21, column 5: Inf * 0 is skipped), and a NaN in b (k 40, column 130: the third):
    // the tiles that hold them take the checked step, the others the fast one, for the same outputs.
    Case& c = add_case(list, Op::gemm, "mixed_tiles_130x131x48",
                       "fast and checked k tiles in one reduction: an Inf meeting a zero, a NaN");
    const int64_t M = 130, N = 131, K = 48;
    std::vector<float> a = seeded_values(path_hash("gemm/mixed_tiles/a"), M * K, Specials::None, -2.0f, 2.0f);
    std::vector<float> b = seeded_values(path_hash("gemm/mixed_tiles/b"), K * N, Specials::None, -2.0f, 2.0f);
    a[3 * K + 21] = std::numeric_limits<float>::infinity();
    b[21 * N + 5] = 0.0f;
    b[40 * N + 130] = std::numeric_limits<float>::quiet_NaN();
    c.in("a", {M, K}, Specials::None).set(a);
    c.in("b", {K, N}, Specials::None).weight().set(b);
    c.out("c", {M, N});
    c.call = [](CallArgs& a) {
      a.backend.gemm(a.num.mac, a.in("a"), a.in("b"), a.opt("bias"), a.out("c"), a.key);
    };
  }
  {
    Case& c = add_case(list, Op::gemm, "transposed_b",
                       "b (K,N) as the transpose of a (N,K) weight, as Linear does");
    c.in("a", {6, 37}, Specials::Zeros);
    c.in("b", {19, 37}, Specials::Zeros).t(0, 1).weight();
    c.out("c", {6, 19});
    c.call = [](CallArgs& a) {
      a.backend.gemm(a.num.mac, a.in("a"), a.in("b"), a.opt("bias"), a.out("c"), a.key);
    };
  }
}

void block_cases(CaseList& list) {
  struct B {
    const char* name;
    const char* format;
    Shape shape;
    ReadLayout layout;  // len 0: rows along the last dimension
    Specials sp;        // one Inf or NaN makes its whole block NaN: most cases keep to finite values
  };
  const B blocks[] = {
      {"mxfp8_e4m3_7x45", "mxfp8_e4m3", {7, 45}, {}, Specials::Zeros},
      {"mxfp8_e4m3_inner", "mxfp8_e4m3", {3, 40, 2}, {3, 40, 2}, Specials::Zeros},
      {"mxfp8_e4m3_specials", "mxfp8_e4m3", {4, 33}, {}, Specials::All},
      {"mxint8_5x70", "mxint8", {5, 70}, {}, Specials::Zeros},
      {"nvfp4_6x37", "nvfp4", {6, 37}, {}, Specials::Finite},
      {"bfp8_b16_4x50", "bfp8_b16", {4, 50}, {}, Specials::Zeros},
      {"afp4m3_whole", "afp4m3", {9, 11}, {}, Specials::Zeros},
  };
  for (const B& b : blocks) {
    Case& c = add_case(list, Op::quantize_blocks, b.name,
                       std::string(b.format) + " blocks, rows [outer, len, inner] (partial last block)");
    c.in("x", b.shape, b.sp);
    c.out("y", b.shape);
    c.round_inputs = true;
    ReadLayout l = b.layout;
    if (l.len == 0) l = rows_along_last_dim(shape_numel(b.shape), b.shape.back());
    const std::string spec = b.format;
    c.call = [l, spec](CallArgs& a) {
      // Under a stochastic policy the elements round with :sr (draws keyed by element index).
      const Format f = parse_format(is_stochastic(a.num.f) ? spec + ":sr" : spec);
      a.backend.quantize_blocks(f, a.in("x"), a.out("y"), l, a.key);
    };
  }
  {
    Case& c =
        add_case(list, Op::quantize_blocks, "transposed_input", "mxfp8_e4m3 blocks of a transposed (45,7)");
    c.in("x", {45, 7}, Specials::Zeros).t(0, 1);
    c.out("y", {7, 45});
    c.round_inputs = true;
    c.call = [](CallArgs& a) {
      const Format f = parse_format(is_stochastic(a.num.f) ? "mxfp8_e4m3:sr" : "mxfp8_e4m3");
      a.backend.quantize_blocks(f, a.in("x"), a.out("y"), ReadLayout{7, 45, 1}, a.key);
    };
  }
  {
    Case& c = add_case(list, Op::quantize_blocks, "in_place_transposed_rows",
                       "y is x; mxfp8_e4m3 blocks down columns");
    c.in("x", {40, 3}, Specials::Zeros).io();
    c.round_inputs = true;
    c.call = [](CallArgs& a) {
      const Format f = parse_format(is_stochastic(a.num.f) ? "mxfp8_e4m3:sr" : "mxfp8_e4m3");
      a.backend.quantize_blocks(f, a.in("x"), a.in("x"), ReadLayout{1, 40, 3}, a.key);
    };
  }
}

void mask_cases(CaseList& list) {
  struct M {
    const char* name;
    const char* note;
    Shape shape;
    ReadLayout layout;
    int n, m;
    NmScoreSource score;
    bool transposed;
  };
  const M masks[] = {
      {"magnitude_6x10",
       "2:4 by magnitude, rows of 10 (a group of 2 at the end)",
       {6, 10},
       {6, 10, 1},
       2,
       4,
       NmScoreSource::Magnitude,
       false},
      {"inner_layout_1of3",
       "1:3 down the middle dimension of (2,5,6)",
       {2, 5, 6},
       {2, 5, 6},
       1,
       3,
       NmScoreSource::Magnitude,
       false},
      {"random_2of4", "2:4 by Philox scores", {5, 12}, {5, 12, 1}, 2, 4, NmScoreSource::Random, false},
      {"given_3of8",
       "3:8 by the values themselves (signed order)",
       {3, 21},
       {3, 21, 1},
       3,
       8,
       NmScoreSource::Given,
       false},
      {"transposed_scores",
       "2:4 on a transposed (10,6) view",
       {10, 6},
       {6, 10, 1},
       2,
       4,
       NmScoreSource::Magnitude,
       true},
      {"keep_all_4of4", "4:4 keeps every element", {3, 9}, {3, 9, 1}, 4, 4, NmScoreSource::Magnitude, false},
      {"empty", "no rows", {0, 8}, {0, 8, 1}, 2, 4, NmScoreSource::Magnitude, false},
  };
  for (const M& m : masks) {
    Case& c = add_case(list, Op::nm_mask, m.name, m.note);
    InputSpec& s = c.in("s", m.shape);
    if (m.transposed) s.t(0, 1);
    Shape out = m.shape;
    if (m.transposed) std::swap(out[0], out[1]);
    c.out("mask", out, false);
    c.round_inputs = true;
    NmParams p;
    p.n = m.n;
    p.m = m.m;
    p.score = m.score;
    p.layout = m.layout;
    c.call = [p](CallArgs& a) { a.backend.nm_mask(p, a.in("s"), a.out("mask"), a.key); };
  }
  {
    // Ties (equal magnitudes, -0 and +0) and NaNs decide by index and rank.
    Case& c = add_case(list, Op::nm_mask, "ties_nan", "equal magnitudes, signed zeros and NaN in 2:4 groups");
    c.in("s", {4, 8}, Specials::None).set({1.0f, -1.0f, 1.0f, -1.0f, 0.0f,      -0.0f, 0.0f,      2.0f,
                                           NAN,  1.0f,  NAN,  3.0f,  -INFINITY, 5.0f,  INFINITY,  -5.0f,
                                           2.0f, 2.0f,  2.0f, 2.0f,  -0.0f,     -0.0f, 0x1p-149f, -0x1p-149f,
                                           7.0f, -7.0f, 7.0f, NAN,   0.5f,      0.25f, 0.5f,      0.25f});
    c.out("mask", {4, 8}, false);
    c.call = [](CallArgs& a) {
      NmParams p;
      p.layout = ReadLayout{4, 8, 1};
      a.backend.nm_mask(p, a.in("s"), a.out("mask"), a.key);
    };
  }
  // apply_mask: a select; masks hold 0, -0 (dropped), 1, 2 and NaN (kept).
  auto mask_values = [](int64_t n) {
    std::vector<float> v = seeded_indices(0x6d61736bull + static_cast<uint64_t>(n), n, 7);
    for (float& x : v) x = x < 3 ? 0.0f : x < 4 ? -0.0f : x < 6 ? 1.0f : (n % 2 ? NAN : 2.0f);
    return v;
  };
  {
    Case& c = add_case(list, Op::apply_mask, "mask_1000", "1000 elements with every special value");
    c.in("x", {1000});
    c.in("mask", {1000}).exact(mask_values(1000));
    c.out("y", {1000});
    c.round_inputs = true;
    c.call = [](CallArgs& a) { a.backend.apply_mask(a.in("x"), a.in("mask"), a.out("y")); };
  }
  {
    Case& c = add_case(list, Op::apply_mask, "views", "a transposed x and a narrowed mask");
    c.in("x", {13, 7}).t(0, 1);
    c.in("mask", {7, 16}).exact(mask_values(112)).narrow(1, 2, 13);
    c.out("y", {7, 13});
    c.round_inputs = true;
    c.call = [](CallArgs& a) { a.backend.apply_mask(a.in("x"), a.in("mask"), a.out("y")); };
  }
  {
    Case& c = add_case(list, Op::apply_mask, "in_place", "y is x");
    c.in("x", {257}).io();
    c.in("mask", {257}).exact(mask_values(257));
    c.round_inputs = true;
    c.call = [](CallArgs& a) { a.backend.apply_mask(a.in("x"), a.in("mask"), a.in("x")); };
  }
  {
    Case& c = add_case(list, Op::apply_mask, "empty", "no elements");
    c.in("x", {0});
    c.in("mask", {0}).exact({});
    c.out("y", {0});
    c.call = [](CallArgs& a) { a.backend.apply_mask(a.in("x"), a.in("mask"), a.out("y")); };
  }
}

}  // namespace

void add_dense_cases(CaseList& list) {
  quantize_cases(list);
  gemm_cases(list);
  block_cases(list);
  mask_cases(list);
}

}  // namespace emu::validate
