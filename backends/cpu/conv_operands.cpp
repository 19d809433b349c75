// The convolutions' operands made on demand (backends/cpu/conv_operands.h).
//
// A block of pixels [p0, p0 + n) is cut into runs along image rows; along a run the input column
// moves by the stride, so each run of each tap is one strided copy of an input (or gy) row with
// zeros where it leaves the row: contiguous at stride 1, which the compiler turns into vector copies.
#include "backends/cpu/conv_operands.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/block_copy.h"
#include "numerics/fast_round_lanes.h"
#include "numerics/parallel_for.h"

namespace emu {
namespace {

// Pixels [first, first + count) of row `row` of image n; `at` is the offset of the first in the block.
struct Run {
  int64_t n, row, col, count, at;
};

// The runs of pixels [p0, p0 + np) on a grid of `rows` x `cols` pixels per image (in a buffer of the
// calling thread's, reused: fills are small and many).
const std::vector<Run>& runs_of(int64_t p0, int64_t np, int64_t rows, int64_t cols) {
  thread_local std::vector<Run> runs;
  runs.clear();
  const int64_t plane = rows * cols;
  for (int64_t p = p0, end = p0 + np; p < end;) {
    const int64_t n = p / plane, s = p % plane, r = s / cols, c = s % cols;
    const int64_t count = std::min(cols - c, end - p);
    runs.push_back({n, r, c, count, p - p0});
    p += count;
  }
  return runs;
}

// The loops below are short (a run of a panel's 8 to 32 columns): they copy and clear 8 floats at a
// time with vector moves, where GCC would otherwise call memcpy and memset, which cost more than
// they copy at these lengths.
inline void zeros(float* out, int64_t count, int64_t os) {
  if (os == 1) {
    int64_t c = 0;
    for (; c + 8 <= count; c += 8) {
      const v8f32 z = {};
      std::memcpy(out + c, &z, sizeof z);
    }
    for (; c < count; ++c) out[c] = 0.0f;
    return;
  }
  for (int64_t c = 0; c < count; ++c) out[c * os] = 0.0f;
}

// out[c * os] = row[i0 + c * step] where 0 <= i0 + c * step < width, else 0, for c < count.
inline void strided_row(const float* row, int64_t width, int64_t i0, int64_t step, int64_t count, float* out,
                        int64_t os) {
  int64_t lo, hi;  // the columns c inside the row: [lo, hi)
  if (step == 1) {
    lo = i0 >= 0 ? 0 : -i0;
    hi = width - i0;
  } else {
    lo = i0 >= 0 ? 0 : (-i0 + step - 1) / step;
    hi = i0 <= width - 1 ? (width - 1 - i0) / step + 1 : 0;
  }
  hi = std::clamp<int64_t>(hi, 0, count);
  lo = std::min(lo, hi);
  zeros(out, lo, os);
  if (step == 1 && os == 1) {
    const float* src = row + i0;
    int64_t c = lo;
    for (; c + 8 <= hi; c += 8) {
      v8f32 v;
      std::memcpy(&v, src + c, sizeof v);
      std::memcpy(out + c, &v, sizeof v);
    }
    for (; c < hi; ++c) out[c] = src[c];
  } else {
    for (int64_t c = lo; c < hi; ++c) out[c * os] = row[i0 + c * step];
  }
  zeros(out + hi * os, count - hi, os);
}

// Tap t = (ci, kh, kw) of the kernel.
struct Tap {
  int64_t ci, kh, kw;
};
inline Tap tap(const ConvGeom& g, int64_t t) {
  const int64_t khw = g.KH * g.KW, r = t % khw;
  return {t / khw, r / g.KW, r % g.KW};
}
// The next tap, without divisions.
inline void next(int64_t KH, int64_t KW, Tap* t) {
  if (++t->kw == KW) {
    t->kw = 0;
    if (++t->kh == KH) {
      t->kh = 0;
      ++t->ci;
    }
  }
}

// The geometry copied into locals, which the compiler keeps in registers (through the reference it
// would reload every field after each store of a value).
struct Walk {
  int64_t H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw;
  explicit Walk(const ConvGeom& g)
      : H(g.H),
        W(g.W),
        OH(g.OH),
        OW(g.OW),
        KH(g.KH),
        KW(g.KW),
        sh(g.sh),
        sw(g.sw),
        ph(g.ph),
        pw(g.pw),
        dh(g.dh),
        dw(g.dw) {}
};

// The im2col values of the taps from `first` on along run r: tap number l at out + l * tap_step,
// pixel c of the run at + c * os.
inline void im2col_taps(const Walk& w, const float* xn, const Run& r, Tap t, int64_t taps, float* out,
                        int64_t tap_step, int64_t os) {
  const int64_t hw = w.H * w.W, ihb = r.row * w.sh - w.ph, iwb = r.col * w.sw - w.pw;
  for (int64_t l = 0; l < taps; ++l, out += tap_step, next(w.KH, w.KW, &t)) {
    const int64_t ih = ihb + t.kh * w.dh;
    if (ih < 0 || ih >= w.H) {
      zeros(out, r.count, os);
      continue;
    }
    strided_row(xn + t.ci * hw + ih * w.W, w.W, iwb + t.kw * w.dw, w.sw, r.count, out, os);
  }
}

}  // namespace

template <class PlaneOf>
void PaddedPlanes::build(int64_t count, PlaneOf planes, int64_t src_rows, int64_t src_cols, int64_t r_lo,
                         int64_t r_hi, int64_t c_lo, int64_t c_hi, int threads) {
  row_lo = std::min<int64_t>(0, r_lo);
  col_lo = std::min<int64_t>(0, c_lo);
  rows = std::max(src_rows, r_hi) - row_lo;
  cols = std::max(src_cols, c_hi) - col_lo;
  const int64_t size = plane_size();
  data = UninitBuffer<float>(static_cast<size_t>(count * size));
  parallel_for(count, threads, std::max<int64_t>(1, 16384 / std::max<int64_t>(size, 1)),
               [&](int64_t i0, int64_t i1) {
                 for (int64_t i = i0; i < i1; ++i) {
                   const float* src = planes(i);
                   float* out = data.data() + i * size;
                   for (int64_t r = 0; r < rows; ++r) {
                     float* row = out + r * cols;
                     const int64_t sr = row_lo + r;
                     if (sr < 0 || sr >= src_rows) {
                       std::fill(row, row + cols, 0.0f);
                       continue;
                     }
                     std::fill(row, row - col_lo, 0.0f);
                     std::copy(src + sr * src_cols, src + (sr + 1) * src_cols, row - col_lo);
                     std::fill(row - col_lo + src_cols, row + cols, 0.0f);
                   }
                 }
               });
}

namespace {

using cpu_copy::copy_run;

// The values of group grp's gy planes, for the operands that read gy (GemmOperand::values).
GemmValues gy_group_values(const ConvGeom& g, const float* gy, int64_t grp) {
  return {gy + grp * g.Cog * g.ohw(), g.N, g.Cog * g.ohw(), g.C_out * g.ohw()};
}

// The group's x planes (n, ci) at stride 1 for the im2col operands: output row oh and tap kh read
// input row oh - ph + kh dh, from -ph to OH - 1 - ph + (KH - 1) dh (columns alike).
void pad_input(const ConvGeom& g, const float* x, int64_t grp, int threads, PaddedPlanes* padded) {
  if (g.sh != 1 || g.sw != 1) return;
  const int64_t hw = g.H * g.W;
  padded->build(
      g.N * g.Cig, [&](int64_t i) { return x + ((i / g.Cig) * g.C_in + grp * g.Cig + i % g.Cig) * hw; }, g.H,
      g.W, -g.ph, g.OH - g.ph + (g.KH - 1) * g.dh, -g.pw, g.OW - g.pw + (g.KW - 1) * g.dw, threads);
}

}  // namespace

Im2colByPixel::Im2colByPixel(const ConvGeom& g, const float* x, int64_t grp, int threads)
    : g_(g), x_(x), grp_(grp) {
  pad_input(g, x, grp, threads, &padded_);
}
Im2colByTap::Im2colByTap(const ConvGeom& g, const float* x, int64_t grp, int threads)
    : g_(g), x_(x), grp_(grp) {
  pad_input(g, x, grp, threads, &padded_);
}

// The transposed layout: pixel c of run r at row r.at + c, tap l at column l.
void Im2colByTap::fill_padded(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  const Walk w(g_);
  const int64_t psize = padded_.plane_size(), pcols = padded_.cols;
  constexpr int64_t kMaxTaps = 64;  // a panel's width or a micro-tile's height
  int64_t offset[kMaxTaps];
  for (int64_t l0 = 0; l0 < nx; l0 += kMaxTaps) {  // at most kMaxTaps taps at a time
    const int64_t taps = std::min(kMaxTaps, nx - l0);
    Tap t = tap(g_, x0 + l0);
    for (int64_t l = 0; l < taps; ++l, next(w.KH, w.KW, &t))
      offset[l] = t.ci * psize + t.kh * w.dh * pcols + t.kw * w.dw;
    for (const Run& r : runs_of(k0, kc, w.OH, w.OW)) {
      // Output (oh, ow) and tap (ci, kh, kw) read input (oh - ph + kh dh, ow - pw + kw dw): each tap a
      // run of the run's pixels, blocks of 8 taps x 8 pixels transposed, the edges one by one.
      const float* base = padded_.at(r.n * g_.Cig, r.row - w.ph, r.col - w.pw);
      const int64_t taps8 = taps / 8 * 8, count8 = r.count / 8 * 8;
      for (int64_t l = 0; l < taps8; l += 8) {
        const float* rows[8];
        for (int i = 0; i < 8; ++i) rows[i] = base + offset[l + i];
        for (int64_t c = 0; c < count8; c += 8) {
          cpu_copy::transpose_8x8_rows(rows, dst + (r.at + c) * ld + l0 + l, ld);
          for (int i = 0; i < 8; ++i) rows[i] += 8;
        }
      }
      for (int64_t c = 0; c < r.count; ++c) {
        float* out = dst + (r.at + c) * ld + l0;
        for (int64_t l = c < count8 ? taps8 : 0; l < taps; ++l) out[l] = base[offset[l] + c];
      }
    }
  }
}

void Im2colByPixel::fill_padded(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst,
                                int64_t ld) const {
  const Walk w(g_);
  const int64_t psize = padded_.plane_size(), pcols = padded_.cols;
  const Tap first = tap(g_, k0);  // (ci, kh, kw)
  for (const Run& r : runs_of(x0, nx, w.OH, w.OW)) {
    // Output (oh, ow) and tap (ci, kh, kw) read input (oh - ph + kh dh, ow - pw + kw dw).
    const float* base = padded_.at(r.n * g_.Cig, r.row - w.ph, r.col - w.pw);
    float* out = dst + r.at;
    Tap t = first;
    for (int64_t q = 0; q < kc; ++q, out += ld, next(w.KH, w.KW, &t))
      copy_run(base + t.ci * psize + t.kh * w.dh * pcols + t.kw * w.dw, out, r.count);
  }
}

void Im2colByPixel::fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  if (padded_.data.size() != 0) {
    fill_padded(x0, nx, k0, kc, dst, ld);
    return;
  }
  const Walk w(g_);
  const float* xg = x_ + grp_ * g_.Cig * w.H * w.W;
  const Tap first = tap(g_, k0);
  for (const Run& r : runs_of(x0, nx, w.OH, w.OW))
    im2col_taps(w, xg + r.n * g_.C_in * w.H * w.W, r, first, kc, dst + r.at, ld, 1);
}

void Im2colByTap::fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  if (padded_.data.size() != 0) {
    fill_padded(x0, nx, k0, kc, dst, ld);
    return;
  }
  const Walk w(g_);
  const float* xg = x_ + grp_ * g_.Cig * w.H * w.W;
  const Tap first = tap(g_, x0);
  for (const Run& r : runs_of(k0, kc, w.OH, w.OW))
    im2col_taps(w, xg + r.n * g_.C_in * w.H * w.W, r, first, nx, dst + r.at * ld, 1, ld);
}

GradByPixel::GradByPixel(const ConvGeom& g, const float* gy, int64_t grp, int threads)
    : g_(g), gy_(gy), grp_(grp) {
  if (g.sh != 1 || g.sw != 1) return;
  // Input row ih and tap kh read output row ih + ph - kh dh: from ph - (KH - 1) dh to H - 1 + ph.
  const int64_t ohw = g.ohw();
  padded_.build(
      g.N * g.Cog, [&](int64_t i) { return gy + ((i / g.Cog) * g.C_out + grp * g.Cog + i % g.Cog) * ohw; },
      g.OH, g.OW, g.ph - (g.KH - 1) * g.dh, g.H + g.ph, g.pw - (g.KW - 1) * g.dw, g.W + g.pw, threads);
}

void GradByPixel::fill_padded(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  const Walk w(g_);
  const int64_t psize = padded_.plane_size(), pcols = padded_.cols;
  const int64_t khw = w.KH * w.KW;
  for (const Run& r : runs_of(x0, nx, w.H, w.W)) {
    // Input (ih, iw) and tap (co, kh, kw) read output (ih + ph - kh dh, iw + pw - kw dw): addresses
    // that fall as the taps of a channel rise. Each channel's rows are written from its last tap
    // back, so that the reads rise (the rows' order does not matter; reading downwards made this
    // fill twice as slow as Im2colByPixel's on ResNet-18's 32 x 32 planes).
    const float* base = padded_.at(r.n * g_.Cog, r.row + w.ph, r.col + w.pw);
    for (int64_t q0 = 0; q0 < kc;) {
      const int64_t t0 = k0 + q0, co = t0 / khw, q1 = std::min(kc, (co + 1) * khw - k0);
      const float* plane = base + co * psize;
      Tap t = tap(g_, k0 + q1 - 1);
      for (int64_t q = q1 - 1; q >= q0; --q) {
        copy_run(plane - t.kh * w.dh * pcols - t.kw * w.dw, dst + r.at + q * ld, r.count);
        if (t.kw-- == 0) t.kw = w.KW - 1, --t.kh;
      }
      q0 = q1;
    }
  }
}

void GradByPixel::fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  if (padded_.data.size() != 0) {
    fill_padded(x0, nx, k0, kc, dst, ld);
    return;
  }
  const Walk w(g_);
  const int64_t ohw = w.OH * w.OW;
  const float* gg = gy_ + grp_ * g_.Cog * ohw;
  const Tap first = tap(g_, k0);  // (co, kh, kw)
  for (const Run& r : runs_of(x0, nx, w.H, w.W)) {
    const float* gn = gg + r.n * g_.C_out * ohw;
    float* out = dst + r.at;
    Tap t = first;
    for (int64_t q = 0; q < kc; ++q, out += ld, next(w.KH, w.KW, &t)) {
      // Input (ih, iw) reads output ((ih + ph - kh dh) / sh, (iw + pw - kw dw) / sw) where both divide.
      const int64_t th = r.row + w.ph - t.kh * w.dh;
      const int64_t oh = w.sh == 1 ? th : th >= 0 && th % w.sh == 0 ? th / w.sh : -1;
      if (oh < 0 || oh >= w.OH) {
        zeros(out, r.count, 1);
        continue;
      }
      const float* row = gn + t.ci * ohw + oh * w.OW;
      const int64_t t0 = r.col + w.pw - t.kw * w.dw;
      if (w.sw == 1) {
        strided_row(row, w.OW, t0, 1, r.count, out, 1);
        continue;
      }
      zeros(out, r.count, 1);
      for (int64_t c = t0 >= 0 ? (w.sw - t0 % w.sw) % w.sw : -t0; c < r.count; c += w.sw) {
        const int64_t ow = (t0 + c) / w.sw;
        if (ow >= w.OW) break;
        out[c] = row[ow];
      }
    }
  }
}

void GyByChannel::fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  const int64_t ohw = g_.ohw();
  for (int64_t p = k0, end = k0 + kc; p < end;) {  // runs of pixels within one image
    const int64_t n = p / ohw, s = p % ohw, count = std::min(ohw - s, end - p);
    float* out = dst + (p - k0) * ld;
    const float* src = gy_ + (n * g_.C_out + grp_ * g_.Cog + x0) * ohw + s;  // channel l at src + l * ohw
    // Blocks of 8 channels x 8 pixels transposed, the edges one by one.
    const int64_t nx8 = nx / 8 * 8, count8 = count / 8 * 8;
    for (int64_t l = 0; l < nx8; l += 8)
      for (int64_t c = 0; c < count8; c += 8)
        cpu_copy::transpose_8x8(src + l * ohw + c, ohw, out + c * ld + l, ld);
    for (int64_t c = 0; c < count; ++c)
      for (int64_t l = c < count8 ? nx8 : 0; l < nx; ++l) out[c * ld + l] = src[l * ohw + c];
    p += count;
  }
}

GemmValues Im2colByPixel::values() const {
  return {x_ + grp_ * g_.Cig * g_.H * g_.W, g_.N, g_.Cig * g_.H * g_.W, g_.C_in * g_.H * g_.W};
}
GemmValues Im2colByTap::values() const {
  return {x_ + grp_ * g_.Cig * g_.H * g_.W, g_.N, g_.Cig * g_.H * g_.W, g_.C_in * g_.H * g_.W};
}
GradByPhase::GradByPhase(const ConvGeom& g, const float* gy, int64_t grp, int64_t a, int64_t b)
    : g_(g), gy_(gy), grp_(grp), a_(a), b_(b) {
  rows_ = a < g.H ? (g.H - a + g.sh - 1) / g.sh : 0;
  cols_ = b < g.W ? (g.W - b + g.sw - 1) / g.sw : 0;
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    const int64_t t = a + g.ph - kh * g.dh;  // oh * sh for u = 0
    if (t % g.sh == 0) {
      kh_.push_back(kh);
      oh0_.push_back(t / g.sh);
    }
  }
  for (int64_t kw = 0; kw < g.KW; ++kw) {
    const int64_t t = b + g.pw - kw * g.dw;
    if (t % g.sw == 0) {
      kw_.push_back(kw);
      ow0_.push_back(t / g.sw);
    }
  }
}

void GradByPhase::tap(int64_t t, int64_t* co, int64_t* kh, int64_t* kw) const {
  const int64_t taps = static_cast<int64_t>(kh_.size() * kw_.size()), nkw = static_cast<int64_t>(kw_.size());
  *co = t / taps;
  *kh = kh_[static_cast<size_t>(t % taps / nkw)];
  *kw = kw_[static_cast<size_t>(t % nkw)];
}

int64_t GradByPhase::pixel_offset(int64_t p) const {
  const int64_t plane = rows_ * cols_, n = p / plane, u = p % plane / cols_, v = p % cols_;
  return n * g_.C_in * g_.H * g_.W + (a_ + g_.sh * u) * g_.W + (b_ + g_.sw * v);
}

void GradByPhase::fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  const int64_t ohw = g_.ohw(), OW = g_.OW;
  const int64_t taps = static_cast<int64_t>(kh_.size() * kw_.size()), nkw = static_cast<int64_t>(kw_.size());
  const float* gg = gy_ + grp_ * g_.Cog * ohw;
  for (const Run& r : runs_of(x0, nx, rows_, cols_)) {  // (n, u, v .. v + count - 1)
    const float* gn = gg + r.n * g_.C_out * ohw;
    float* out = dst + r.at;
    for (int64_t q = 0; q < kc; ++q, out += ld) {
      const int64_t t = k0 + q, co = t / taps, i = t % taps / nkw, j = t % nkw;
      const int64_t oh = oh0_[static_cast<size_t>(i)] + r.row;
      if (oh < 0 || oh >= g_.OH) {
        zeros(out, r.count, 1);
        continue;
      }
      // Pixels v .. v + count - 1 read output columns ow .. ow + count - 1: the part inside gy is copied.
      const int64_t ow = ow0_[static_cast<size_t>(j)] + r.col;
      const int64_t c0 = std::clamp<int64_t>(-ow, 0, r.count), c1 = std::clamp<int64_t>(OW - ow, c0, r.count);
      zeros(out, c0, 1);
      if (c1 > c0) copy_run(gn + co * ohw + oh * OW + ow + c0, out + c0, c1 - c0);
      zeros(out + c1, r.count - c1, 1);
    }
  }
}

GemmValues GradByPhase::values() const { return gy_group_values(g_, gy_, grp_); }

GemmValues GradByPixel::values() const { return gy_group_values(g_, gy_, grp_); }
GemmValues GyByChannel::values() const { return gy_group_values(g_, gy_, grp_); }

}  // namespace emu
