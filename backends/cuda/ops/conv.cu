// Convolution (forward, grad-input, grad-weight) and channel_sum on the device
// (EMU_OPS_CONV, core/backend_ops_nn.h; CPU reference backends/cpu/conv_ops.cpp).
//
// The three convolutions are implicit GEMMs: the tile kernel of gemm_tile.h,
// one batch per group, with loaders that read x, w and gy in place (no im2col
// buffer). Each output's K terms come in the canonical order of the header,
// one by one, with a zero operand wherever the CPU's packing writes one
// (padding, a tap off the stride grid), so every output is mac_reduce of the
// CPU's terms and draws at o * mac_site_count(K, chunk) + site (o row-major in
// the result), the CPU's numbering:
//
//   forward      rows co (of the group), columns the pixels (n, oh, ow), k = (ci, kh, kw);
//                term mac_term(x tap, w) as the CPU's im2col x w^T; bias in the reduction.
//   grad-input   rows ci (of the group), columns the input pixels (n, ih, iw), k = (co, kh, kw);
//                term mac_term(gy at the output whose tap (kh, kw) reads (ih, iw), w).
//   grad-weight  rows co, columns (ci, kh, kw), k = (n, oh, ow); term mac_term(gy, x tap).
//
// Output pixels are the columns so that neighbouring threads read neighbouring
// x / gy elements and write neighbouring results; the forward and grad-input
// terms then take B before A (kSwapped), the CPU's operand order.
//
// channel_sum is one sequential chain per channel (a sum: mul exact, b = 1);
// with chunks its chunks run in parallel and a second kernel adds their sums
// in order in acc_outer, exactly as mac_step / mac_finish would in one chain.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/gemm_tile.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/scratch.h"
#include "core/conv_checks.h"
#include "numerics/mac.h"
#include "numerics/philox.h"
#include "numerics/row_reduce.h"

namespace emu::EMU_CUDA_NS {
namespace {

// q = k / d, r = k % d for 0 <= k < 2^31, 0 < d < 2^31 (the host checks the bounds): the 32-bit
// division, several times cheaper on a GPU than the 64-bit one, in the operand loaders.
EMU_HD void divmod(int64_t k, int64_t d, int64_t* q, int64_t* r) {
  const uint32_t qq = static_cast<uint32_t>(k) / static_cast<uint32_t>(d);
  *q = qq;
  *r = k - static_cast<int64_t>(qq) * d;
}
// The same in 32-bit registers, for the decodes of B's loads (one per loaded element,
// 16 per thread and k tile): no conversions between the widths.
EMU_HD void divmod32(uint32_t k, uint32_t d, uint32_t* q, uint32_t* r) {
  *q = k / d;
  *r = k - *q * d;
}
EMU_HD uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }
EMU_HD int32_t i32(int64_t v) { return static_cast<int32_t>(v); }

// The geometry of core/backend_ops_nn.h (as the CPU's ConvGeom), with the
// products the loaders use made once on the host (kernel parameters: constant
// operands on the device, not multiplications per loaded element).
struct ConvGeom : ConvShape {
  int64_t khw_ = 0, hw_ = 0, ohw_ = 0, chw_ = 0, cohw_ = 0;  // KH KW, H W, OH OW, C_in H W, C_out OH OW
  ConvGeom() = default;
  explicit ConvGeom(const ConvShape& s)
      : ConvShape(s), khw_(KH * KW), hw_(H * W), ohw_(OH * OW), chw_(C_in * H * W), cohw_(C_out * OH * OW) {}
  EMU_HD int64_t khw() const { return khw_; }
  EMU_HD int64_t hw() const { return hw_; }
  EMU_HD int64_t ohw() const { return ohw_; }
  EMU_HD int64_t kg() const { return Cig * khw_; }   // forward terms per output, grad-weight outputs per row
  EMU_HD int64_t kgi() const { return Cog * khw_; }  // grad-input terms per output
  // Whether (ih, iw) lies inside the input: one unsigned comparison each (a negative
  // position wraps above; positions fit 32 bits, check_index_range).
  EMU_HD bool inside(int32_t ih, int32_t iw) const {
    return static_cast<uint32_t>(ih) < u32(H) && static_cast<uint32_t>(iw) < u32(W);
  }
};

// The loaders decode k and the positions derived from it (a tap, a padded coordinate, a
// position inside one plane) in 32-bit arithmetic: the largest of them must fit, and a
// padded side stays below 2^30 (ConvGradInput::b_at's unsigned test relies on it).
void check_index_range(const char* op, const ConvGeom& g, int64_t K) {
  const int64_t largest = std::max({K, g.ohw(), g.hw()}), side = std::max(g.H + 2 * g.ph, g.W + 2 * g.pw);
  if (largest > std::numeric_limits<int32_t>::max() || side >= (int64_t{1} << 30))
    throw std::invalid_argument(
        fmt::format("{}: {} terms per output, x {}x{} padded by {}x{}: beyond the "
                    "kernel's 32-bit index decoding (terms and planes below 2^31, padded sides below 2^30)",
                    op, K, g.H, g.W, g.ph, g.pw));
}

// Forward, group b: A(co, k) = w[b*Cog + co, k], B(k, pixel) = x tap (ci, kh, kw) of the pixel or 0.
struct ConvForward {
  static constexpr bool kSwapped = true;  // the CPU's term is (x tap, w)
  ConvGeom g;
  const float* x;
  const float* w;
  const float* bias_base;  // (C_out) or null

  using RowCursor = const float*;  // w's row of output channel co
  struct ColCursor {
    const float* planes = nullptr;  // x[n, b*Cig, 0, 0]
    int32_t ih0 = 0, iw0 = 0;       // the input position of tap (0, 0)
  };
  EMU_HD RowCursor a_row(int64_t b, int64_t co) const { return offset_or_null(w, (b * g.Cog + co) * g.kg()); }
  EMU_HD float a_at(RowCursor r, int64_t k) const { return r[k]; }
  EMU_HD ColCursor b_col(int64_t b, int64_t pixel) const {
    const int64_t n = pixel / g.ohw(), s = pixel % g.ohw();
    return ColCursor{offset_or_null(x, (n * g.C_in + b * g.Cig) * g.hw()), i32(s / g.OW * g.sh - g.ph),
                     i32(s % g.OW * g.sw - g.pw)};
  }
  EMU_HD float b_at(const ColCursor& c, int64_t k) const {
    uint32_t ci, t, kh, kw;
    divmod32(u32(k), u32(g.khw()), &ci, &t);
    divmod32(t, u32(g.KW), &kh, &kw);
    const int32_t ih = c.ih0 + i32(kh) * i32(g.dh), iw = c.iw0 + i32(kw) * i32(g.dw);
    return g.inside(ih, iw) ? c.planes[ci * g.hw() + (ih * i32(g.W) + iw)] : 0.0f;
  }
  EMU_HD uint64_t out_index(int64_t b, int64_t co, int64_t pixel) const {
    const int64_t n = pixel / g.ohw(), s = pixel % g.ohw();
    return static_cast<uint64_t>((n * g.C_out + b * g.Cog + co) * g.ohw() + s);
  }
  EMU_HD const float* bias(int64_t b, int64_t co, int64_t) const {
    return bias_base ? bias_base + b * g.Cog + co : nullptr;
  }
};

// Grad-input, group b: A(ci, k) = w[b*Cog + co, ci, kh, kw], B(k, input pixel) = gy at the output
// whose tap (kh, kw) reads the pixel, or 0 (outside, or off the stride grid).
struct ConvGradInput {
  static constexpr bool kSwapped = true;  // the CPU's term is (gy, w)
  ConvGeom g;
  const float* gy;
  const float* w;

  using RowCursor = const float*;  // w[b*Cog, ci, 0, 0]: term (co, t) at co * Cig*KH*KW + t
  struct ColCursor {
    const float* planes = nullptr;  // gy[n, b*Cog, 0, 0]
    int32_t ihp = 0, iwp = 0;       // the input pixel's position in the padded input
  };
  EMU_HD RowCursor a_row(int64_t b, int64_t ci) const {
    return offset_or_null(w, (b * g.Cog * g.Cig + ci) * g.khw());
  }
  EMU_HD float a_at(RowCursor r, int64_t k) const {
    int64_t co, t;
    divmod(k, g.khw(), &co, &t);
    return r[co * g.kg() + t];
  }
  EMU_HD ColCursor b_col(int64_t b, int64_t pixel) const {
    const int64_t n = pixel / g.hw(), s = pixel % g.hw();
    return ColCursor{offset_or_null(gy, (n * g.C_out + b * g.Cog) * g.ohw()), i32(s / g.W + g.ph),
                     i32(s % g.W + g.pw)};
  }
  // The term of tap (kh, kw) of output channel co: the output pixel (oh, ow) that reads this
  // input pixel through that tap, when it lies on the stride grid and inside the output along
  // both axes, else 0. The position t = ihp - kh dh may be negative: as unsigned it is then
  // above 3 x 2^30 (t > -2^30, since a padded side stays below 2^30, check_index_range, and
  // the dilated kernel fits inside it), so t / stride >= 3 x 2^30 / stride, which OH <=
  // (2^30 - 1) / stride + 1 never reaches: the one unsigned test covers both ends. The four
  // conditions are combined without branches (one predicate per loaded element).
  EMU_HD float b_at(const ColCursor& c, int64_t k) const {
    uint32_t co, t, kh, kw;
    divmod32(u32(k), u32(g.khw()), &co, &t);
    divmod32(t, u32(g.KW), &kh, &kw);
    const uint32_t th = u32(c.ihp - i32(kh) * i32(g.dh)), tw = u32(c.iwp - i32(kw) * i32(g.dw));
    const uint32_t oh = th / u32(g.sh), ow = tw / u32(g.sw);
    const bool on = (oh * u32(g.sh) == th) & (oh < u32(g.OH)) & (ow * u32(g.sw) == tw) & (ow < u32(g.OW));
    return on ? c.planes[co * g.ohw() + (oh * u32(g.OW) + ow)] : 0.0f;
  }
  EMU_HD uint64_t out_index(int64_t b, int64_t ci, int64_t pixel) const {
    const int64_t n = pixel / g.hw(), s = pixel % g.hw();
    return static_cast<uint64_t>((n * g.C_in + b * g.Cig + ci) * g.hw() + s);
  }
  EMU_HD const float* bias(int64_t, int64_t, int64_t) const { return nullptr; }
};

// Grad-weight, group b: A(co, k) = gy[n, b*Cog + co, oh, ow], B(k, (ci, kh, kw)) = x tap (kh, kw)
// of output pixel (oh, ow) in channel b*Cig + ci, or 0.
struct ConvGradWeight {
  static constexpr bool kSwapped = false;  // the CPU's term is (gy, x tap)
  ConvGeom g;
  const float* x;
  const float* gy;

  using RowCursor = const float*;  // gy[0, b*Cog + co, 0, 0]: term (n, s) at n * C_out*OH*OW + s
  struct ColCursor {
    const float* planes = nullptr;  // x[0, b*Cig + ci, 0, 0]
    int32_t ih0 = 0, iw0 = 0;       // the input position the tap reads for output pixel (0, 0)
  };
  EMU_HD RowCursor a_row(int64_t b, int64_t co) const {
    return offset_or_null(gy, (b * g.Cog + co) * g.ohw());
  }
  EMU_HD float a_at(RowCursor r, int64_t k) const {
    int64_t n, s;
    divmod(k, g.ohw(), &n, &s);
    return r[n * g.cohw_ + s];
  }
  EMU_HD ColCursor b_col(int64_t b, int64_t col) const {
    const int64_t ci = col / g.khw(), t = col % g.khw();
    return ColCursor{offset_or_null(x, (b * g.Cig + ci) * g.hw()), i32(t / g.KW * g.dh - g.ph),
                     i32(t % g.KW * g.dw - g.pw)};
  }
  EMU_HD float b_at(const ColCursor& c, int64_t k) const {
    uint32_t n, s, oh, ow;
    divmod32(u32(k), u32(g.ohw()), &n, &s);
    divmod32(s, u32(g.OW), &oh, &ow);
    const int32_t ih = i32(oh) * i32(g.sh) + c.ih0, iw = i32(ow) * i32(g.sw) + c.iw0;
    return g.inside(ih, iw) ? c.planes[n * g.chw_ + (ih * i32(g.W) + iw)] : 0.0f;
  }
  // The row's start is made opaque to the compiler (an empty asm that "changes" it): computed so
  // cheaply, every output's address was otherwise hoisted out of the k loop and kept live through
  // it (for the accumulators' round trip through memory on a tile's slow path), and the kernel
  // hit 255 registers and spilled 8 bytes under every path (docs/cuda_kernels.md, the budget
  // table); recomputed where used, it takes 194 under fp32. The value does not change.
  EMU_HD uint64_t out_index(int64_t b, int64_t co, int64_t col) const {
    int64_t row = b * g.Cog + co;
#ifdef __CUDA_ARCH__
    asm volatile("" : "+l"(row));
#endif
    return static_cast<uint64_t>(row * g.kg() + col);
  }
  EMU_HD const float* bias(int64_t, int64_t, int64_t) const { return nullptr; }
};

// --- channel_sum -----------------------------------------------------------

// Channel c's sum as one chain: mac_step over k = (n, s) ascending, every b = 1, then mac_finish;
// `native` (plain fp32 accumulator, no chunks, no draws): binary32 additions, the same bits.
__global__ void channel_sum_kernel(MacPolicy sp, bool native, const float* x, float* y, int64_t N, int64_t C,
                                   int64_t S, DrawKey key, uint64_t sites) {
  EMU_GRID_STRIDE_LOOP(c, C) {
    const int64_t K = N * S;
    if (native) {
      float acc = 0.0f;  // +0
      for (int64_t n = 0; n < N; ++n) {
        const float* row = x + (n * C + c) * S;
        for (int64_t s = 0; s < S; ++s)
          if (row[s] != 0.0f) acc = fp32::add(acc, row[s]);  // a zero term is skipped
      }
      y[c] = static_cast<float>(round_value(sp.out, acc));
      continue;
    }
    const RowDraws draw{key.seed, key.stream, static_cast<uint64_t>(c) * sites};
    MacSums st;  // a channel sum: never fused
    int64_t k = 0;
    for (int64_t n = 0; n < N; ++n) {
      const float* row = x + (n * C + c) * S;
      for (int64_t s = 0; s < S; ++s, ++k) mac_step(sp, st, K, k, row[s], 1.0f, draw);
    }
    y[c] = static_cast<float>(mac_finish(sp, st, K, nullptr, draw));
  }
}

// Chunked sums, first part: chunk q of channel c (thread i = c * chunks + q) steps its terms
// k in [q*chunk, (q+1)*chunk) from a fresh state, with the chain's positions and draws, and
// leaves the chunk's sum (in acc) in part[i]. mac_step also promotes the fresh state's +0 at
// the chunk's first k; that value is not used.
__global__ void channel_chunk_kernel(MacPolicy sp, const float* x, double* part, int64_t N, int64_t C,
                                     int64_t S, int64_t chunks, DrawKey key, uint64_t sites) {
  EMU_GRID_STRIDE_LOOP(i, C * chunks) {
    const int64_t c = i / chunks, q = i % chunks, K = N * S;
    const int64_t k0 = q * sp.chunk, k1 = k0 + sp.chunk < K ? k0 + sp.chunk : K;
    const RowDraws draw{key.seed, key.stream, static_cast<uint64_t>(c) * sites};
    MacSums st;  // a channel sum: never fused
    int64_t n = k0 / S, s = k0 % S;
    for (int64_t k = k0; k < k1; ++k) {
      mac_step(sp, st, K, k, x[(n * C + c) * S + s], 1.0f, draw);
      if (++s == S) s = 0, ++n;
    }
    part[i] = st.acc;
  }
}

// Second part: channel c's chain of promotions. mac_step of a zero term at each chunk's first
// k promotes the previous chunk's sum into acc_outer (its draw site) and steps nothing; the last
// chunk's sum goes to mac_finish. The same state sequence as one chain.
__global__ void channel_chunk_total_kernel(MacPolicy sp, const double* part, float* y, int64_t C, int64_t K,
                                           int64_t chunks, DrawKey key, uint64_t sites) {
  EMU_GRID_STRIDE_LOOP(c, C) {
    const RowDraws draw{key.seed, key.stream, static_cast<uint64_t>(c) * sites};
    MacSums st;  // a channel sum: never fused
    for (int64_t q = 0; q < chunks; ++q) {
      if (q > 0) mac_step(sp, st, K, q * sp.chunk, 0.0f, 1.0f, draw);
      st.acc = part[c * chunks + q];
    }
    y[c] = static_cast<float>(mac_finish(sp, st, K, nullptr, draw));
  }
}

}  // namespace

// x (N,C_in,H,W), w (C_out,C_in/G,KH,KW), bias (C_out) or null -> y (N,C_out,OH,OW)
void CudaBackend::conv2d_forward(const MacPolicy& p, const Conv2dParams& cp, const Tensor& x, const Tensor& w,
                                 const Tensor* bias, Tensor& y, DrawKey key) {
  const char* op = "conv2d_forward";
  OpScope scope(op);
  const ConvGeom g{check_conv2d_forward(cp, x, w, bias, y)};
  float* yp = contiguous_data(y, "y");
  if (y.numel() == 0) return;
  check_index_range(op, g, g.kg());
  const Tensor X = x.contiguous(), Wt = w.contiguous();
  const Tensor B = bias ? bias->contiguous() : Tensor();
  const ConvForward prob{g, view_of(X).data, view_of(Wt).data, bias ? view_of(B).data : nullptr};
  tile::TileShape s;
  s.rows = g.Cog;
  s.cols = g.N * g.ohw();
  s.K = g.kg();
  s.batches = g.G;
  s.c = yp;
  s.key = key;
  tile::launch_tiles("conv2d_forward_kernel", p, prob, s);
}

// gy (N,C_out,OH,OW), w (C_out,C_in/G,KH,KW) -> gx (N,C_in,H,W)
void CudaBackend::conv2d_grad_input(const MacPolicy& p, const Conv2dParams& cp, const Tensor& gy,
                                    const Tensor& w, Tensor& gx, DrawKey key) {
  const char* op = "conv2d_grad_input";
  OpScope scope(op);
  const ConvGeom g{check_conv2d_grad_input(cp, gy, w, gx)};
  float* xp = contiguous_data(gx, "gx");
  if (gx.numel() == 0) return;
  check_index_range(op, g, g.kgi());
  const Tensor GY = gy.contiguous(), Wt = w.contiguous();
  const ConvGradInput prob{g, view_of(GY).data, view_of(Wt).data};
  tile::TileShape s;
  s.rows = g.Cig;
  s.cols = g.N * g.hw();
  s.K = g.kgi();
  s.batches = g.G;
  s.c = xp;
  s.key = key;
  tile::launch_tiles("conv2d_grad_input_kernel", p, prob, s);
}

// x (N,C_in,H,W), gy (N,C_out,OH,OW) -> gw (C_out,C_in/G,KH,KW)
void CudaBackend::conv2d_grad_weight(const MacPolicy& p, const Conv2dParams& cp, const Tensor& x,
                                     const Tensor& gy, Tensor& gw, DrawKey key) {
  const char* op = "conv2d_grad_weight";
  OpScope scope(op);
  const ConvGeom g{check_conv2d_grad_weight(cp, x, gy, gw)};
  float* wp = contiguous_data(gw, "gw");
  if (gw.numel() == 0) return;
  check_index_range(op, g, g.N * g.ohw());
  const Tensor X = x.contiguous(), GY = gy.contiguous();
  const ConvGradWeight prob{g, view_of(X).data, view_of(GY).data};
  tile::TileShape s;
  s.rows = g.Cog;
  s.cols = g.kg();
  s.K = g.N * g.ohw();
  s.batches = g.G;
  s.c = wp;
  s.key = key;
  tile::launch_tiles("conv2d_grad_weight_kernel", p, prob, s);
}

// x (N,C,S) -> y (C): the sum of docs/contract.md section 4.7 (mul exact, b = 1) over (n, s),
// rounded to p.out.
void CudaBackend::channel_sum(const MacPolicy& p, const Tensor& x, Tensor& y, DrawKey key) {
  OpScope scope("channel_sum");
  check_channel_sum(x, y);
  const int64_t N = x.dim(0), C = x.dim(1), S = x.dim(2), K = N * S;
  float* yp = contiguous_data(y, "y");
  if (C == 0) return;
  const Tensor X = x.contiguous();
  const float* xp = K > 0 ? view_of(X).data : nullptr;
  MacPolicy sp = unfused(p);  // a channel sum (docs/contract.md section 4.7): never fused
  sp.mul_exact = true;        // a sum: products with 1 are exact, and a multiplier table is never read
  const uint64_t sites = mac_site_count(K, sp.chunk);
  const int64_t chunks = sp.chunk > 0 && K > 0 ? (K + sp.chunk - 1) / sp.chunk : 1;
  if (chunks < 2) {
    const bool native = !draws_random(sp) && sp.chunk == 0 && is_plain_fp32(sp.acc);
    launch_each("channel_sum_kernel", channel_sum_kernel, C, sp, native, xp, yp, N, C, S, key, sites);
    return;
  }
  DeviceArray<double> part(static_cast<size_t>(C * chunks));
  launch_each("channel_chunk_kernel", channel_chunk_kernel, C * chunks, sp, xp, part.get(), N, C, S, chunks,
              key, sites);
  launch_each("channel_chunk_total_kernel", channel_chunk_total_kernel, C, sp, part.get(), yp, C, K, chunks,
              key, sites);
}

}  // namespace emu::EMU_CUDA_NS
