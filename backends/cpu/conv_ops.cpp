// conv2d_forward, conv2d_grad_input, conv2d_grad_weight and channel_sum on the CPU.
// Conv1d runs these ops too, on (N, C, 1, L) with a 1 x K kernel (layers/conv1d.h).
//
// Each convolution is a GEMM per group whose output (i, j) is mac_reduce over k
// ascending: the operands lay the terms out in the canonical order of
// core/backend_ops_nn.h, so the fast GEMM paths give the bits of the definition.
//
// Policies of the fast paths (a)-(e) of docs/gemm.md run mac_gemm_operands on
// operands made on demand (backends/cpu/conv_operands.h): the GEMM packs the
// im2col matrix or the gathered gradient straight into its panels, block by
// block, and writes its outputs into the (N, C, H, W) layout. Its outputs run
// along pixels (forward: C_out/G x pixels, grad-input: C_in/G x pixels) or along
// the kernel taps (grad-weight: taps x C_out/G), which keeps the vector lanes
// full when a layer has few channels; so the weight is the GEMM's A and the
// activation or gradient its B, the reverse of the canonical (a, b) order of a
// term, which these paths' products do not see (mac_term is symmetric in a and
// b unless a table or split scheme forms the products: custom_mul).
//
// Other policies (generic, approximate-multiplier tables, split schemes) store
// im2col or the gathered gradient in blocks of at most kPackFloats floats and
// run mac_gemm. Policies with stochastic rounding run the direct loop
// (mac_reduce per output with the op's draw numbering), which is also what the
// GEMM's generic path would do.
#include <algorithm>
#include <thread>
#include <vector>

#include "backends/cpu/conv_operands.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/reduce_arith.h"
#include "backends/cpu/row_ops.h"
#include "backends/cpu/uninit_buffer.h"
#include "core/conv_checks.h"
#include "numerics/philox.h"

namespace emu {
namespace {

using cpu_rows::direct_reduce;

constexpr int64_t kPackFloats = int64_t{1} << 22;  // 16 MiB per packed operand (and result) block

// im2col of group g: rows r in [r0, r1) of the flattened (n, oh, ow), columns c in [c0, c1) of the
// flattened (ci, kh, kw) -> dst[(r - r0) * ld + (c - c0)]; padding positions are 0.
void im2col(const ConvGeom& g, const float* x, int64_t grp, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
            float* dst, int64_t ld, int threads) {
  const int64_t khw = g.KH * g.KW, hw = g.H * g.W;
  parallel_for(r1 - r0, threads, 64, [&](int64_t a, int64_t b) {
    std::vector<int64_t> at(static_cast<size_t>(khw));  // (kh, kw) -> offset in the input plane, or -1
    for (int64_t r = r0 + a; r < r0 + b; ++r) {
      const int64_t n = r / g.ohw(), s = r % g.ohw(), oh = s / g.OW, ow = s % g.OW;
      for (int64_t kh = 0; kh < g.KH; ++kh)
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          const int64_t ih = g.input_h(oh, kh), iw = g.input_w(ow, kw);
          at[kh * g.KW + kw] = g.inside(ih, iw) ? ih * g.W + iw : -1;
        }
      const float* planes = x + (n * g.C_in + grp * g.Cig) * hw;
      float* out = dst + (r - r0) * ld;
      int64_t ci = c0 / khw, t = c0 % khw;
      for (int64_t c = c0; c < c1; ++c) {
        *out++ = at[t] >= 0 ? planes[ci * hw + at[t]] : 0.0f;
        if (++t == khw) t = 0, ++ci;
      }
    }
  });
}

// The grad-input operand of group g: rows r in [r0, r1) of the flattened (n, ih, iw), columns the
// flattened (co, kh, kw) -> dst[(r - r0) * kgi + col]: gy at the output pixel whose window puts (kh, kw)
// on (ih, iw), or 0 where there is none.
void gather_grad_rows(const ConvGeom& g, const float* gy, int64_t grp, int64_t r0, int64_t r1, float* dst,
                      int threads) {
  const int64_t khw = g.KH * g.KW, ohw = g.ohw();
  parallel_for(r1 - r0, threads, 64, [&](int64_t a, int64_t b) {
    std::vector<int64_t> at(static_cast<size_t>(khw));  // (kh, kw) -> offset in the output plane, or -1
    for (int64_t r = r0 + a; r < r0 + b; ++r) {
      const int64_t n = r / (g.H * g.W), s = r % (g.H * g.W), ih = s / g.W, iw = s % g.W;
      for (int64_t kh = 0; kh < g.KH; ++kh)
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          const int64_t oh = g.output_h(ih, kh), ow = g.output_w(iw, kw);
          at[kh * g.KW + kw] = oh >= 0 && ow >= 0 ? oh * g.OW + ow : -1;
        }
      const float* planes = gy + (n * g.C_out + grp * g.Cog) * ohw;
      float* out = dst + (r - r0) * g.kgi();
      for (int64_t co = 0; co < g.Cog; ++co, planes += ohw)
        for (int64_t t = 0; t < khw; ++t) *out++ = at[t] >= 0 ? planes[at[t]] : 0.0f;
    }
  });
}

// How many GEMM tasks to run side by side (one per group, each with a single-threaded GEMM) and how many
// threads each gets: many groups run in parallel, few groups thread inside the GEMM.
void plan_threads(int64_t groups, int threads, int64_t* side_by_side, int* inner) {
  const int t = resolve_threads(threads);
  if (groups >= t && t > 1) {
    *side_by_side = t;
    *inner = 1;
  } else {
    *side_by_side = 1;
    *inner = t;
  }
}

// Whether p's GEMM takes operands made on demand in its packed panels (fast paths (a)-(e)), with A
// and B in either order (the products do not depend on it: no table or split scheme).
bool packs_operands(const MacPolicy& p) {
  switch (gemm_policy_path(p)) {
    case GemmPath::Fp32:
    case GemmPath::MulFmaF32:
    case GemmPath::MulRneF32:
    case GemmPath::MulIeeeF32:
    case GemmPath::AccIeee:
    case GemmPath::Int:
    case GemmPath::Posit:
      return !custom_mul(p);
    default:
      return false;
  }
}

// Group grp's weights w_g (C_out/G, C_in/G, KH, KW) as the grad-input's A (C_in/G, (co, kh, kw)):
// wt[cl * K + (co * KH + kh) * KW + kw], rows of channels split over `threads` threads.
void transpose_group_weight(const ConvGeom& g, const float* wp, int64_t grp, float* wt, int threads) {
  const int64_t khw = g.KH * g.KW, K = g.kgi();
  parallel_for(g.Cig, threads, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t co = 0; co < g.Cog; ++co)
      for (int64_t cl = c0; cl < c1; ++cl)
        for (int64_t t = 0; t < khw; ++t)
          wt[cl * K + co * khw + t] = wp[((grp * g.Cog + co) * g.Cig + cl) * khw + t];
  });
}

// Whether a GEMM may leave out zero terms and keep its bits: mac_reduce skips them, but chunks
// (acc_outer) and fused runs count terms by position, and :sr in acc_outer or out draws by the
// output's index and term count.
bool terms_may_be_left_out(const MacPolicy& p) {
  return p.chunk == 0 && p.fused == 0 && !is_stochastic(p.out) && !is_stochastic(p.acc_outer);
}

// Column j = (n, s) of a GEMM over the pixels of N images of `plane` pixels -> its offset n * stride + s
// in an (N, C, plane) tensor (GemmOutput::col_offset).
std::vector<int64_t> pixel_offsets(int64_t N, int64_t plane, int64_t stride) {
  std::vector<int64_t> off(static_cast<size_t>(N * plane));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < plane; ++s) off[n * plane + s] = n * stride + s;
  return off;
}

// The grad-weight's outputs run along the kernel taps when a group has at least this many output
// channels (vector lanes full either way), along the channels below (few channels, many taps).
constexpr int64_t kTapRowsFromChannels = 16;

// fn(group, inner_threads) for every group, `side_by_side` groups at a time.
template <class Fn>
void for_groups(int64_t groups, int threads, const Fn& fn) {
  int64_t side = 1;
  int inner = 1;
  plan_threads(groups, threads, &side, &inner);
  parallel_for(groups, static_cast<int>(side), 1, [&](int64_t g0, int64_t g1) {
    for (int64_t grp = g0; grp < g1; ++grp) fn(grp, inner);
  });
}

}  // namespace

// x (N,C_in,H,W), w (C_out,C_in/G,KH,KW), bias (C_out) or null -> y (N,C_out,OH,OW)
void CpuBackend::conv2d_forward(const MacPolicy& p, const Conv2dParams& cp, const Tensor& x, const Tensor& w,
                                const Tensor* bias, Tensor& y, DrawKey key) {
  const ConvGeom g{check_conv2d_forward(cp, x, w, bias, y)};
  const Tensor X = x.contiguous(), Wt = w.contiguous();
  const Tensor B = bias ? bias->contiguous() : Tensor();
  const float* xp = X.data();
  const float* wp = Wt.data();
  const float* bp = bias ? B.data() : nullptr;
  float* yp = y.data();
  const int64_t K = g.kg(), ohw = g.ohw();
  if (y.numel() == 0) return;

  if (draws_random(p)) {
    direct_reduce(p, y.numel(), K, key, threads_, yp, [&](int64_t o, float* a, float* b) -> const float* {
      const int64_t ow = o % g.OW, oh = o / g.OW % g.OH, co = o / ohw % g.C_out, n = o / ohw / g.C_out;
      const int64_t grp = co / g.Cog;
      int64_t k = 0;
      for (int64_t ci = 0; ci < g.Cig; ++ci)
        for (int64_t kh = 0; kh < g.KH; ++kh)
          for (int64_t kw = 0; kw < g.KW; ++kw, ++k) {
            const int64_t ih = g.input_h(oh, kh), iw = g.input_w(ow, kw);
            a[k] = g.inside(ih, iw) ? xp[((n * g.C_in + grp * g.Cig + ci) * g.H + ih) * g.W + iw] : 0.0f;
            b[k] = wp[co * K + k];
          }
      return bp ? bp + co : nullptr;
    });
    return;
  }

  if (packs_operands(p)) {
    // Per group: (C_out/G, pixels) = w_g (C_out/G, K) x im2col (K, pixels), bias per row, into y.
    const std::vector<int64_t> cols = pixel_offsets(g.N, ohw, g.C_out * ohw);
    for_groups(g.G, threads_, [&](int64_t grp, int inner) {
      const MatrixOperand a = MatrixOperand::of_rows(wp + grp * g.Cog * K, K, g.Cog, K);
      const Im2colByPixel b(g, xp, grp, inner);
      GemmOutput out;
      out.C = yp + grp * g.Cog * ohw;
      out.ldc = ohw;
      out.col_offset = cols.data();
      out.bias = bp ? bp + grp * g.Cog : nullptr;
      out.bias_per_row = true;
      mac_gemm_operands(p, a, b, out, g.Cog, g.N * ohw, K, GemmDraws{key.seed, key.stream}, inner);
    });
    return;
  }

  // Per group: A = im2col rows (pixels, K), B = w_g^T (K, C_out/G), bias per column; C (pixels, C_out/G).
  const int64_t rows = g.N * ohw;
  const int64_t block = std::clamp<int64_t>(kPackFloats / std::max<int64_t>({K, g.Cog, 1}), 1, rows);
  for_groups(g.G, threads_, [&](int64_t grp, int inner) {
    UninitBuffer<float> wt(static_cast<size_t>(K * g.Cog));
    for (int64_t co = 0; co < g.Cog; ++co)
      for (int64_t k = 0; k < K; ++k) wt[k * g.Cog + co] = wp[(grp * g.Cog + co) * K + k];
    UninitBuffer<float> a(static_cast<size_t>(block * K)), c(static_cast<size_t>(block * g.Cog));
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t r1 = std::min(rows, r0 + block);
      im2col(g, xp, grp, r0, r1, 0, K, a.data(), K, inner);
      mac_gemm(p, a.data(), K, wt.data(), g.Cog, c.data(), g.Cog, r1 - r0, g.Cog, K,
               bp ? bp + grp * g.Cog : nullptr, GemmDraws{key.seed, key.stream}, inner);
      parallel_for(r1 - r0, inner, 256, [&](int64_t a0, int64_t a1) {
        for (int64_t r = r0 + a0; r < r0 + a1; ++r) {
          const int64_t n = r / ohw, s = r % ohw;
          const float* src = c.data() + (r - r0) * g.Cog;
          float* dst = yp + (n * g.C_out + grp * g.Cog) * ohw + s;
          for (int64_t co = 0; co < g.Cog; ++co) dst[co * ohw] = src[co];
        }
      });
    }
  });
}

// gy (N,C_out,OH,OW), w (C_out,C_in/G,KH,KW) -> gx (N,C_in,H,W)
void CpuBackend::conv2d_grad_input(const MacPolicy& p, const Conv2dParams& cp, const Tensor& gy,
                                   const Tensor& w, Tensor& gx, DrawKey key) {
  const ConvGeom g{check_conv2d_grad_input(cp, gy, w, gx)};
  const Tensor GY = gy.contiguous(), Wt = w.contiguous();
  const float* gp = GY.data();
  const float* wp = Wt.data();
  float* xp = gx.data();
  const int64_t K = g.kgi(), hw = g.H * g.W, khw = g.KH * g.KW;
  if (gx.numel() == 0) return;

  if (draws_random(p)) {
    direct_reduce(p, gx.numel(), K, key, threads_, xp, [&](int64_t o, float* a, float* b) -> const float* {
      const int64_t iw = o % g.W, ih = o / g.W % g.H, ci = o / hw % g.C_in, n = o / hw / g.C_in;
      const int64_t grp = ci / g.Cig, cl = ci % g.Cig;
      int64_t k = 0;
      for (int64_t co = grp * g.Cog; co < (grp + 1) * g.Cog; ++co)
        for (int64_t kh = 0; kh < g.KH; ++kh)
          for (int64_t kw = 0; kw < g.KW; ++kw, ++k) {
            const int64_t oh = g.output_h(ih, kh), ow = g.output_w(iw, kw);
            a[k] = oh >= 0 && ow >= 0 ? gp[((n * g.C_out + co) * g.OH + oh) * g.OW + ow] : 0.0f;
            b[k] = wp[(co * g.Cig + cl) * khw + kh * g.KW + kw];
          }
      return nullptr;
    });
    return;
  }

  if (packs_operands(p) && (g.sh > 1 || g.sw > 1) && terms_may_be_left_out(p)) {
    // Per group and phase (a, b) of the stride grid: (C_in/G, the phase's input pixels) = w_g as
    // (C_in/G, the phase's taps) x GradByPhase (its taps, its pixels), into gx. The taps left out
    // would add zero terms.
    for_groups(g.G, threads_, [&](int64_t grp, int inner) {
      const float* wg = wp + grp * g.Cog * g.Cig * khw;
      float* gxg = xp + grp * g.Cig * hw;
      for (int64_t a = 0; a < g.sh; ++a)
        for (int64_t b = 0; b < g.sw; ++b) {
          const GradByPhase gph(g, gp, grp, a, b);
          const int64_t kp = gph.terms(), pixels = gph.pixels();
          if (pixels == 0) continue;
          std::vector<int64_t> cols(static_cast<size_t>(pixels));
          for (int64_t j = 0; j < pixels; ++j) cols[static_cast<size_t>(j)] = gph.pixel_offset(j);
          // kp = 0 (no tap reaches these pixels: a 1 x 1 kernel at stride 2): the GEMM's empty sums.
          // A = w_g as (C_in/G, the phase's taps): wph[cl * kp + t] = w_g[co][cl][kh][kw] of tap t.
          std::vector<int64_t> tap_at(static_cast<size_t>(kp));  // w_g offset of tap t at cl = 0
          for (int64_t t = 0; t < kp; ++t) {
            int64_t co = 0, kh = 0, kw = 0;
            gph.tap(t, &co, &kh, &kw);
            tap_at[static_cast<size_t>(t)] = co * g.Cig * khw + kh * g.KW + kw;
          }
          UninitBuffer<float> wph(static_cast<size_t>(kp * g.Cig));
          parallel_for(g.Cig, inner, 1, [&](int64_t c0, int64_t c1) {
            for (int64_t cl = c0; cl < c1; ++cl)
              for (int64_t t = 0; t < kp; ++t)
                wph[cl * kp + t] = wg[cl * khw + tap_at[static_cast<size_t>(t)]];
          });
          const MatrixOperand a_op = MatrixOperand::of_rows(wph.data(), kp, g.Cig, kp);
          GemmOutput out;
          out.C = gxg;
          out.ldc = hw;
          out.col_offset = cols.data();
          mac_gemm_operands(p, a_op, gph, out, g.Cig, pixels, kp, GemmDraws{key.seed, key.stream}, inner);
        }
    });
    return;
  }

  if (packs_operands(p)) {
    // Per group: (C_in/G, input pixels) = w_g as (C_in/G, (co, kh, kw)) x gathered gy (K, input pixels),
    // into gx.
    const std::vector<int64_t> cols = pixel_offsets(g.N, hw, g.C_in * hw);
    for_groups(g.G, threads_, [&](int64_t grp, int inner) {
      UninitBuffer<float> wt(static_cast<size_t>(K * g.Cig));
      transpose_group_weight(g, wp, grp, wt.data(), inner);
      const MatrixOperand a = MatrixOperand::of_rows(wt.data(), K, g.Cig, K);
      const GradByPixel b(g, gp, grp, inner);
      GemmOutput out;
      out.C = xp + grp * g.Cig * hw;
      out.ldc = hw;
      out.col_offset = cols.data();
      mac_gemm_operands(p, a, b, out, g.Cig, g.N * hw, K, GemmDraws{key.seed, key.stream}, inner);
    });
    return;
  }

  // Per group: A = gathered gy rows (input pixels, K), B (K, C_in/G) = w_g as ((co, kh, kw), ci);
  // C (input pixels, C_in/G).
  const int64_t rows = g.N * hw;
  const int64_t block = std::clamp<int64_t>(kPackFloats / std::max<int64_t>({K, g.Cig, 1}), 1, rows);
  for_groups(g.G, threads_, [&](int64_t grp, int inner) {
    UninitBuffer<float> wb(static_cast<size_t>(K * g.Cig));
    for (int64_t co = 0; co < g.Cog; ++co)
      for (int64_t cl = 0; cl < g.Cig; ++cl)
        for (int64_t t = 0; t < khw; ++t)
          wb[(co * khw + t) * g.Cig + cl] = wp[((grp * g.Cog + co) * g.Cig + cl) * khw + t];
    UninitBuffer<float> a(static_cast<size_t>(block * K)), c(static_cast<size_t>(block * g.Cig));
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t r1 = std::min(rows, r0 + block);
      gather_grad_rows(g, gp, grp, r0, r1, a.data(), inner);
      mac_gemm(p, a.data(), K, wb.data(), g.Cig, c.data(), g.Cig, r1 - r0, g.Cig, K, nullptr,
               GemmDraws{key.seed, key.stream}, inner);
      parallel_for(r1 - r0, inner, 256, [&](int64_t a0, int64_t a1) {
        for (int64_t r = r0 + a0; r < r0 + a1; ++r) {
          const int64_t n = r / hw, s = r % hw;
          const float* src = c.data() + (r - r0) * g.Cig;
          float* dst = xp + (n * g.C_in + grp * g.Cig) * hw + s;
          for (int64_t cl = 0; cl < g.Cig; ++cl) dst[cl * hw] = src[cl];
        }
      });
    }
  });
}

// x (N,C_in,H,W), gy (N,C_out,OH,OW) -> gw (C_out,C_in/G,KH,KW)
void CpuBackend::conv2d_grad_weight(const MacPolicy& p, const Conv2dParams& cp, const Tensor& x,
                                    const Tensor& gy, Tensor& gw, DrawKey key) {
  const ConvGeom g{check_conv2d_grad_weight(cp, x, gy, gw)};
  const Tensor X = x.contiguous(), GY = gy.contiguous();
  const float* xp = X.data();
  const float* gp = GY.data();
  float* wp = gw.data();
  const int64_t kg = g.kg(), ohw = g.ohw(), K = g.N * ohw, khw = g.KH * g.KW;

  if (draws_random(p)) {
    direct_reduce(p, gw.numel(), K, key, threads_, wp, [&](int64_t o, float* a, float* b) -> const float* {
      const int64_t kw = o % g.KW, kh = o / g.KW % g.KH, cl = o / khw % g.Cig, co = o / kg;
      const int64_t ci = co / g.Cog * g.Cig + cl;
      int64_t k = 0;
      for (int64_t n = 0; n < g.N; ++n)
        for (int64_t oh = 0; oh < g.OH; ++oh)
          for (int64_t ow = 0; ow < g.OW; ++ow, ++k) {
            const int64_t ih = g.input_h(oh, kh), iw = g.input_w(ow, kw);
            a[k] = gp[((n * g.C_out + co) * g.OH + oh) * g.OW + ow];
            b[k] = g.inside(ih, iw) ? xp[((n * g.C_in + ci) * g.H + ih) * g.W + iw] : 0.0f;
          }
      return nullptr;
    });
    return;
  }

  if (packs_operands(p)) {
    std::vector<int64_t> cols(static_cast<size_t>(g.Cog));  // channel co of the group at co * kg in gw
    for (int64_t co = 0; co < g.Cog; ++co) cols[co] = co * kg;
    for_groups(g.G, threads_, [&](int64_t grp, int inner) {
      const Im2colByTap taps(g, xp, grp, inner);
      const GyByChannel grad(g, gp, grp);
      GemmOutput out;
      out.C = wp + grp * g.Cog * kg;
      const GemmDraws draws{key.seed, key.stream};
      if (g.Cog >= kTapRowsFromChannels) {  // (taps, C_out/G) = im2col (taps, K) x gy (K, C_out/G)
        out.ldc = 1;
        out.col_offset = cols.data();
        mac_gemm_operands(p, taps, grad, out, kg, g.Cog, K, draws, inner);
      } else {  // (C_out/G, taps) = gy (C_out/G, K) x im2col (K, taps)
        out.ldc = kg;
        mac_gemm_operands(p, grad, taps, out, g.Cog, kg, K, draws, inner);
      }
    });
    return;
  }

  // Per group: A = gy_g as (C_out/G, (n, oh, ow)), B = im2col (pixels, kg) in column blocks,
  // C = the columns of gw's group rows (ldc = kg).
  const int64_t cols =
      std::clamp<int64_t>(kPackFloats / std::max<int64_t>(K, 1), 1, std::max<int64_t>(kg, 1));
  for_groups(g.G, threads_, [&](int64_t grp, int inner) {
    UninitBuffer<float> a(static_cast<size_t>(g.Cog * K));
    parallel_for(g.Cog * g.N, inner, 16, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t co = t / g.N, n = t % g.N;
        std::copy_n(gp + (n * g.C_out + grp * g.Cog + co) * ohw, ohw, a.data() + co * K + n * ohw);
      }
    });
    UninitBuffer<float> b(static_cast<size_t>(K * cols));
    for (int64_t c0 = 0; c0 < kg; c0 += cols) {
      const int64_t c1 = std::min(kg, c0 + cols);
      im2col(g, xp, grp, 0, K, c0, c1, b.data(), c1 - c0, inner);
      mac_gemm(p, a.data(), K, b.data(), c1 - c0, wp + grp * g.Cog * kg + c0, kg, g.Cog, c1 - c0, K, nullptr,
               GemmDraws{key.seed, key.stream}, inner);
    }
  });
}

// x (N,C,S) -> y (C): the sum of docs/contract.md section 4.7 (mul exact, b = 1) over (n, s), rounded
// to p.out.
void CpuBackend::channel_sum(const MacPolicy& p, const Tensor& x, Tensor& y, DrawKey key) {
  check_channel_sum(x, y);
  const int64_t N = x.dim(0), C = x.dim(1), S = x.dim(2), K = N * S;
  const Tensor X = x.contiguous();
  const float* xp = X.data();
  float* yp = y.data();
  MacPolicy sp = unfused(p);  // a channel sum (docs/contract.md section 4.7): never fused
  sp.mul_exact = true;
  const std::vector<float> ones(static_cast<size_t>(K), 1.0f);
  const bool fast = !draws_random(sp) && sp.chunk == 0 && is_plain_fp32(sp.acc);
  const uint64_t sites = mac_site_count(K, sp.chunk);
  parallel_for(C, threads_, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> a(static_cast<size_t>(fast ? 0 : K));
    for (int64_t c = c0; c < c1; ++c) {
      if (fast) {
        // Binary32 additions are R_fp32 of the exact sums; a zero term leaves the (never -0) sum as it is.
        float acc = 0.0f;
        for (int64_t n = 0; n < N; ++n) {
          const float* row = xp + (n * C + c) * S;
          for (int64_t s = 0; s < S; ++s) acc = acc + row[s];
        }
        yp[c] = static_cast<float>(round_value(sp.out, acc));
        continue;
      }
      for (int64_t n = 0; n < N; ++n) std::copy_n(xp + (n * C + c) * S, S, a.data() + n * S);
      const uint64_t base = static_cast<uint64_t>(c) * sites;
      auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream, base + site); };
      yp[c] = static_cast<float>(mac_reduce(sp, a.data(), ones.data(), K, nullptr, draw));
    }
  });
}

}  // namespace emu
