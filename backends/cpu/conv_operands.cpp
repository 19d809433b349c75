// The convolutions' operands made on demand (backends/cpu/conv_operands.h).
//
// A block of pixels [p0, p0 + n) is cut into runs along image rows; along a run the input column
// moves by the stride, so each run of each tap is one strided copy of an input (or gy) row with
// zeros where it leaves the row: contiguous at stride 1, which the compiler turns into vector copies.
#include "backends/cpu/conv_operands.h"

#include <algorithm>
#include <vector>

namespace emu {
namespace {

// Pixels [first, first + count) of row `row` of image n; `at` is the offset of the first in the block.
struct Run {
  int64_t n, row, col, count, at;
};

// The runs of pixels [p0, p0 + np) on a grid of `rows` x `cols` pixels per image.
std::vector<Run> runs_of(int64_t p0, int64_t np, int64_t rows, int64_t cols) {
  std::vector<Run> runs;
  const int64_t plane = rows * cols;
  for (int64_t p = p0, end = p0 + np; p < end;) {
    const int64_t n = p / plane, s = p % plane, r = s / cols, c = s % cols;
    const int64_t count = std::min(cols - c, end - p);
    runs.push_back({n, r, c, count, p - p0});
    p += count;
  }
  return runs;
}

// out[c * os] = row[i0 + c * step] where 0 <= i0 + c * step < width, else 0, for c < count.
inline void strided_row(const float* row, int64_t width, int64_t i0, int64_t step, int64_t count, float* out,
                        int64_t os) {
  int64_t lo = i0 >= 0 ? 0 : (-i0 + step - 1) / step;
  int64_t hi = i0 <= width - 1 ? (width - 1 - i0) / step + 1 : 0;
  hi = std::min(hi, count);
  lo = std::min(lo, hi);
  for (int64_t c = 0; c < lo; ++c) out[c * os] = 0.0f;
  if (step == 1 && os == 1) {
    std::copy(row + i0 + lo, row + i0 + hi, out + lo);
  } else {
    for (int64_t c = lo; c < hi; ++c) out[c * os] = row[i0 + c * step];
  }
  for (int64_t c = hi; c < count; ++c) out[c * os] = 0.0f;
}

inline void zeros(float* out, int64_t count, int64_t os) {
  for (int64_t c = 0; c < count; ++c) out[c * os] = 0.0f;
}

// Tap t = (ci, kh, kw) of the kernel.
struct Tap {
  int64_t ci, kh, kw;
};
inline Tap tap(const ConvGeom& g, int64_t t) {
  const int64_t khw = g.KH * g.KW, r = t % khw;
  return {t / khw, r / g.KW, r % g.KW};
}

// The im2col values of tap t along run r, at out[c * os].
inline void im2col_run(const ConvGeom& g, const float* x, int64_t grp, const Tap& t, const Run& r, float* out,
                       int64_t os) {
  const int64_t ih = g.input_h(r.row, t.kh);
  if (ih < 0 || ih >= g.H) return zeros(out, r.count, os);
  const float* row = x + ((r.n * g.C_in + grp * g.Cig + t.ci) * g.H + ih) * g.W;
  strided_row(row, g.W, g.input_w(r.col, t.kw), g.sw, r.count, out, os);
}

}  // namespace

void Im2colByPixel::fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  const std::vector<Run> runs = runs_of(x0, nx, g_.OH, g_.OW);
  for (int64_t q = 0; q < kc; ++q) {
    const Tap t = tap(g_, k0 + q);
    for (const Run& r : runs) im2col_run(g_, x_, grp_, t, r, dst + q * ld + r.at, 1);
  }
}

void Im2colByTap::fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  const std::vector<Run> runs = runs_of(k0, kc, g_.OH, g_.OW);
  for (int64_t l = 0; l < nx; ++l) {
    const Tap t = tap(g_, x0 + l);
    for (const Run& r : runs) im2col_run(g_, x_, grp_, t, r, dst + r.at * ld + l, ld);
  }
}

void GradByPixel::fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  const std::vector<Run> runs = runs_of(x0, nx, g_.H, g_.W);
  for (int64_t q = 0; q < kc; ++q) {
    const Tap t = tap(g_, k0 + q);  // (co, kh, kw)
    float* out = dst + q * ld;
    for (const Run& r : runs) {
      float* o = out + r.at;
      const int64_t oh = g_.output_h(r.row, t.kh);
      if (oh < 0) {
        zeros(o, r.count, 1);
        continue;
      }
      const float* row = gy_ + ((r.n * g_.C_out + grp_ * g_.Cog + t.ci) * g_.OH + oh) * g_.OW;
      // Input column iw = r.col + c reads output column (iw + pw - kw dw) / sw where that divides.
      const int64_t t0 = r.col + g_.pw - t.kw * g_.dw;
      if (g_.sw == 1) {
        strided_row(row, g_.OW, t0, 1, r.count, o, 1);
        continue;
      }
      zeros(o, r.count, 1);
      for (int64_t c = t0 >= 0 ? (g_.sw - t0 % g_.sw) % g_.sw : -t0; c < r.count; c += g_.sw) {
        const int64_t ow = (t0 + c) / g_.sw;
        if (ow >= g_.OW) break;
        o[c] = row[ow];
      }
    }
  }
}

void GyByChannel::fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  const int64_t ohw = g_.ohw();
  for (int64_t p = k0, end = k0 + kc; p < end;) {  // runs of pixels within one image
    const int64_t n = p / ohw, s = p % ohw, count = std::min(ohw - s, end - p);
    float* out = dst + (p - k0) * ld;
    for (int64_t l = 0; l < nx; ++l) {
      const float* src = gy_ + (n * g_.C_out + grp_ * g_.Cog + x0 + l) * ohw + s;
      for (int64_t c = 0; c < count; ++c) out[c * ld + l] = src[c];
    }
    p += count;
  }
}

GemmValues Im2colByPixel::values() const {
  return {x_ + grp_ * g_.Cig * g_.H * g_.W, g_.N, g_.Cig * g_.H * g_.W, g_.C_in * g_.H * g_.W};
}
GemmValues Im2colByTap::values() const {
  return {x_ + grp_ * g_.Cig * g_.H * g_.W, g_.N, g_.Cig * g_.H * g_.W, g_.C_in * g_.H * g_.W};
}
GemmValues GradByPixel::values() const {
  return {gy_ + grp_ * g_.Cog * g_.ohw(), g_.N, g_.Cog * g_.ohw(), g_.C_out * g_.ohw()};
}
GemmValues GyByChannel::values() const {
  return {gy_ + grp_ * g_.Cog * g_.ohw(), g_.N, g_.Cog * g_.ohw(), g_.C_out * g_.ohw()};
}

}  // namespace emu
