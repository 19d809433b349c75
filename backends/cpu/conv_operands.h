// The convolutions' GEMM operands, made on demand (backends/cpu/gemm.h's
// GemmOperand): the fast GEMM paths ask for the blocks they pack and these
// classes write them there straight from x or gy, so no im2col matrix or
// gathered gradient is stored and read again (docs/gemm.md, "Convolutions").
//
// Each operand is one group's: channels grp * Cig .. (grp + 1) * Cig of x, grp *
// Cog .. (grp + 1) * Cog of gy. A pixel index p runs over (n, row, column) of
// the image grid named, row-major; a tap index over (channel, kh, kw).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/uninit_buffer.h"
#include "core/conv_checks.h"

namespace emu {

struct ConvGeom : ConvShape {
  int64_t kg() const { return Cig * KH * KW; }   // forward terms per output (and grad-weight outputs per row)
  int64_t kgi() const { return Cog * KH * KW; }  // grad-input terms per output
  int64_t ohw() const { return OH * OW; }
  Shape x_shape() const { return {N, C_in, H, W}; }
  Shape w_shape() const { return {C_out, Cig, KH, KW}; }
  Shape y_shape() const { return {N, C_out, OH, OW}; }
  // The input row (column) that tap kh (kw) of output row oh (column ow) reads; may lie in the padding.
  int64_t input_h(int64_t oh, int64_t kh) const { return oh * sh - ph + kh * dh; }
  int64_t input_w(int64_t ow, int64_t kw) const { return ow * sw - pw + kw * dw; }
  bool inside(int64_t ih, int64_t iw) const { return ih >= 0 && ih < H && iw >= 0 && iw < W; }
  // The output row (column) whose tap kh (kw) reads input row ih (column iw), or -1: outside, or off
  // the stride grid.
  int64_t output_h(int64_t ih, int64_t kh) const { return on_grid(ih + ph - kh * dh, sh, OH); }
  int64_t output_w(int64_t iw, int64_t kw) const { return on_grid(iw + pw - kw * dw, sw, OW); }
  static int64_t on_grid(int64_t t, int64_t stride, int64_t out) {
    return t >= 0 && t % stride == 0 && t / stride < out ? t / stride : -1;
  }
};

// Planes of a tensor copied with zero borders, so that reads that may leave a
// plane need no bounds: plane i holds rows row_lo .. row_lo + rows - 1 and
// columns col_lo .. col_lo + cols - 1 of source plane i, zeros outside it.
// Used at stride 1 (both directions), where a run of pixels along a row and a
// tap read one contiguous stretch of a row.
struct PaddedPlanes {
  UninitBuffer<float> data{0};  // written in full by build()
  int64_t row_lo = 0, col_lo = 0, rows = 0, cols = 0;
  // Source plane i at planes(i), each src_rows x src_cols; the row and column ranges to cover.
  template <class PlaneOf>
  void build(int64_t count, PlaneOf planes, int64_t src_rows, int64_t src_cols, int64_t r_lo, int64_t r_hi,
             int64_t c_lo, int64_t c_hi, int threads);
  int64_t plane_size() const { return rows * cols; }
  // Element (row, col) of plane i.
  const float* at(int64_t i, int64_t row, int64_t col) const {
    return data.data() + i * plane_size() + (row - row_lo) * cols + (col - col_lo);
  }
};

// x through the im2col matrix of group grp, made of the taps t = (ci, kh, kw) of the kernel and the
// output pixels p = (n, oh, ow): x[n][ci][input_h(oh, kh)][input_w(ow, kw)], 0 in the padding.
// By pixel (index p, term t): the forward's B (K = Cig KH KW, N OH OW), whose outputs run along
// pixels. By tap (index t, term p): the grad-weight's A (rows the taps) or B (columns the taps).
// At stride 1 both read x from PaddedPlanes (built over `threads` threads).
class Im2colByPixel final : public GemmOperand {
 public:
  Im2colByPixel(const ConvGeom& g, const float* x, int64_t grp, int threads);
  void fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const override;
  GemmValues values() const override;

 private:
  void fill_padded(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const;
  const ConvGeom& g_;
  const float* x_;
  int64_t grp_;
  PaddedPlanes padded_;  // the group's x planes (n, ci), at stride 1
};
class Im2colByTap final : public GemmOperand {
 public:
  Im2colByTap(const ConvGeom& g, const float* x, int64_t grp, int threads);
  void fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const override;
  GemmValues values() const override;

 private:
  void fill_padded(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const;
  const ConvGeom& g_;
  const float* x_;
  int64_t grp_;
  PaddedPlanes padded_;  // as Im2colByPixel's
};

// The grad-input's B (K = Cog KH KW, N H W), index the input pixel p = (n, ih, iw), term
// t = (co, kh, kw): gy[n][co][output_h(ih, kh)][output_w(iw, kw)], 0 where that output does not exist.
// At stride 1 it reads gy from PaddedPlanes (built over `threads` threads).
class GradByPixel final : public GemmOperand {
 public:
  GradByPixel(const ConvGeom& g, const float* gy, int64_t grp, int threads);
  void fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const override;
  GemmValues values() const override;

 private:
  void fill_padded(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const;
  const ConvGeom& g_;
  const float* gy_;
  int64_t grp_;
  PaddedPlanes padded_;  // the group's gy planes (n, co), at stride 1
};

// The grad-input's B at a stride above 1, for one phase (a, b) of the stride
// grid: index the input pixel p = (n, u, v) at (ih, iw) = (a + sh u, b + sw v),
// term t = (co, kh, kw) over only the taps whose output lies on the grid for
// that phase (kh with a + ph - kh dh a multiple of sh, kw alike), in ascending
// order: gy[n][co][oh0(kh) + u][ow0(kw) + v], 0 outside gy. GradByPixel's other
// terms for these pixels are zeros, which mac_reduce skips, so the GEMM over
// these terms has the same bits with a quarter of the products at stride 2.
class GradByPhase final : public GemmOperand {
 public:
  GradByPhase(const ConvGeom& g, const float* gy, int64_t grp, int64_t a, int64_t b);
  void fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const override;
  GemmValues values() const override;
  int64_t pixels() const { return g_.N * rows_ * cols_; }
  int64_t terms() const { return g_.Cog * static_cast<int64_t>(kh_.size() * kw_.size()); }
  // Term t's kernel position: (co, kh, kw).
  void tap(int64_t t, int64_t* co, int64_t* kh, int64_t* kw) const;
  // Pixel p's offset in an (N, C_in, H, W) tensor's plane block: n * C_in H W + ih W + iw.
  int64_t pixel_offset(int64_t p) const;

 private:
  const ConvGeom& g_;
  const float* gy_;
  int64_t grp_, a_, b_;
  int64_t rows_, cols_;             // the phase's input rows and columns per image
  std::vector<int64_t> kh_, kw_;    // its taps
  std::vector<int64_t> oh0_, ow0_;  // output row (column) of tap kh_[i] (kw_[j]) at u = 0 (v = 0)
};

// gy of group grp, index the channel co, term the output pixel (n, oh, ow): gy[n][co][oh][ow]; the
// grad-weight's B (columns the channels) or A (rows the channels).
class GyByChannel final : public GemmOperand {
 public:
  GyByChannel(const ConvGeom& g, const float* gy, int64_t grp) : g_(g), gy_(gy), grp_(grp) {}
  void fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const override;
  GemmValues values() const override;

 private:
  const ConvGeom& g_;
  const float* gy_;
  int64_t grp_;
};

}  // namespace emu
