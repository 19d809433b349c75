// The PNG back-end of plot/plot.h: a Figure rasterised into RGB pixels with
// the bitmap font of plot/font.h, written by stb_image_write.
//
// The figure is drawn at twice its size and averaged down 2 x 2, which smooths
// slanted lines; filled areas and text (drawn on whole pixels) keep their exact
// colours. One-pixel axis-aligned lines are snapped to pixel centres so that
// axes and ticks stay crisp.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "plot/font.h"
#include "plot/layout.h"

// stb_image_write's implementation, with internal linkage so that nothing else
// in the program can clash with it.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

namespace emu::plot {
namespace {

constexpr int kSuper = 2;  // supersampling factor

class Canvas {
 public:
  Canvas(int w, int h, Rgb bg) : w_(w * kSuper), h_(h * kSuper), px_(static_cast<size_t>(w_) * h_ * 3) {
    for (size_t i = 0; i < px_.size(); i += 3) px_[i] = bg.r, px_[i + 1] = bg.g, px_[i + 2] = bg.b;
  }

  // Pixels whose centres lie in [x0, x1) x [y0, y1), figure units.
  void fill(double x0, double y0, double x1, double y1, Rgb c) {
    const int i0 = std::max(0, static_cast<int>(std::ceil(x0 * kSuper - 0.5)));
    const int i1 = std::min(w_, static_cast<int>(std::ceil(x1 * kSuper - 0.5)));
    const int j0 = std::max(0, static_cast<int>(std::ceil(y0 * kSuper - 0.5)));
    const int j1 = std::min(h_, static_cast<int>(std::ceil(y1 * kSuper - 0.5)));
    for (int j = j0; j < j1; ++j)
      for (int i = i0; i < i1; ++i) set(i, j, c);
  }

  void disc(double cx, double cy, double r, Rgb c) {
    const double sx = cx * kSuper, sy = cy * kSuper, sr = std::max(r * kSuper, 0.75);
    for (int j = std::max(0, static_cast<int>(sy - sr - 1));
         j <= std::min(h_ - 1, static_cast<int>(sy + sr + 1)); ++j)
      for (int i = std::max(0, static_cast<int>(sx - sr - 1));
           i <= std::min(w_ - 1, static_cast<int>(sx + sr + 1)); ++i) {
        const double dx = i + 0.5 - sx, dy = j + 0.5 - sy;
        if (dx * dx + dy * dy <= sr * sr) set(i, j, c);
      }
  }

  // A segment of width w; `phase` carries a dash pattern across the segments of a path.
  void segment(double x1, double y1, double x2, double y2, double w, Rgb colour, bool dashed, double& phase) {
    const double on = 4 * w, period = 7 * w;
    const bool straight = x1 == x2 || y1 == y2;
    if (straight) {  // filled rectangles on whole pixels (dash pieces along the line)
      const int iw = std::max(1, static_cast<int>(std::lround(w)));
      auto centre = [&](double v) { return iw % 2 ? std::floor(v) + 0.5 : std::round(v); };
      const bool horizontal = y1 == y2;
      const double a = horizontal ? std::min(x1, x2) : std::min(y1, y2);
      const double b = horizontal ? std::max(x1, x2) : std::max(y1, y2);
      const double c = centre(horizontal ? y1 : x1);
      const double cap = iw > 1 ? iw / 2.0 : 0.5;  // square caps; one-pixel lines reach their end pixel
      for (double s0 = a; s0 < b + cap;) {
        double s1 = b + cap;
        if (dashed) {
          const double pos = std::fmod(phase + (s0 - a), period);
          if (pos >= on) {  // in a gap: skip to the next dash
            s0 += period - pos;
            continue;
          }
          s1 = std::min(s1, s0 + on - pos);
        }
        const double lo = s0 == a ? a - (iw > 1 ? iw / 2.0 : 0) : s0;
        if (horizontal)
          fill(lo, c - iw / 2.0, s1, c + iw / 2.0, colour);
        else
          fill(c - iw / 2.0, lo, c + iw / 2.0, s1, colour);
        s0 = s1;
      }
      phase += b - a;
      return;
    }
    const double len = std::hypot(x2 - x1, y2 - y1);
    const double step = 0.25;
    for (double s = 0; s <= len; s += step) {
      if (!dashed || std::fmod(phase + s, period) < on) {
        const double t = len > 0 ? s / len : 0;
        disc(x1 + (x2 - x1) * t, y1 + (y2 - y1) * t, w / 2, colour);
      }
    }
    phase += len;
  }

  void text(const TextPrim& t) {
    const double width = text_width(t.text, t.scale);
    double u0 = t.anchor == Anchor::Start ? 0 : t.anchor == Anchor::Middle ? -width / 2 : -width;
    const double v0 = -text_cap_height(t.scale) / 2;
    // Whole figure pixels for the glyph origin, so glyph pixels stay sharp.
    double ox = std::round(t.x + (t.vertical ? v0 : u0)), oy = std::round(t.y + (t.vertical ? -u0 : v0));
    const int s = t.scale;
    for (size_t k = 0; k < t.text.size(); ++k) {
      unsigned char ch = static_cast<unsigned char>(t.text[k]);
      if (ch < 32 || ch > 126) ch = '?';
      const auto& glyph = font::kGlyphs[ch - 32];
      for (int row = 0; row < font::kGlyphH; ++row)
        for (int col = 0; col < font::kGlyphW; ++col) {
          if (glyph[row][col] != '#') continue;
          const double u = static_cast<double>(k * font::kCellW + col) * s, v = static_cast<double>(row) * s;
          if (t.vertical)  // (u, v) -> (x + v, y - u): reading upwards
            fill(ox + v, oy - u - s, ox + v + s, oy - u, t.color);
          else
            fill(ox + u, oy + v, ox + u + s, oy + v + s, t.color);
        }
    }
  }

  // Averages each kSuper x kSuper block.
  std::vector<uint8_t> pixels() const {
    const int w = w_ / kSuper, h = h_ / kSuper;
    std::vector<uint8_t> out(static_cast<size_t>(w) * h * 3);
    for (int j = 0; j < h; ++j)
      for (int i = 0; i < w; ++i)
        for (int ch = 0; ch < 3; ++ch) {
          int sum = 0;
          for (int b = 0; b < kSuper; ++b)
            for (int a = 0; a < kSuper; ++a)
              sum += px_[(static_cast<size_t>(j * kSuper + b) * w_ + i * kSuper + a) * 3 + ch];
          out[(static_cast<size_t>(j) * w + i) * 3 + ch] =
              static_cast<uint8_t>((sum + kSuper * kSuper / 2) / (kSuper * kSuper));
        }
    return out;
  }

 private:
  void set(int i, int j, Rgb c) {
    uint8_t* p = &px_[(static_cast<size_t>(j) * w_ + i) * 3];
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
  }

  int w_, h_;
  std::vector<uint8_t> px_;
};

}  // namespace

std::vector<uint8_t> rasterize(const Figure& figure) {
  if (figure.width <= 0 || figure.height <= 0 || figure.width > 20000 || figure.height > 20000)
    throw std::runtime_error("plot: figure size out of range");
  Canvas cv(figure.width, figure.height, figure.background);
  for (const Prim& prim : figure.prims) {
    std::visit(
        [&](const auto& p) {
          using T = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<T, LinePrim>) {
            double phase = 0;
            cv.segment(p.x1, p.y1, p.x2, p.y2, p.width, p.color, p.dashed, phase);
          } else if constexpr (std::is_same_v<T, PathPrim>) {
            double phase = 0;
            for (size_t i = 1; i < p.points.size(); ++i)
              cv.segment(p.points[i - 1].first, p.points[i - 1].second, p.points[i].first, p.points[i].second,
                         p.width, p.color, p.dashed, phase);
          } else if constexpr (std::is_same_v<T, RectPrim>) {
            if (p.filled) cv.fill(p.x, p.y, p.x + p.w, p.y + p.h, p.fill);
            if (p.stroked) {
              const double s = p.stroke_width;
              cv.fill(p.x, p.y, p.x + p.w, p.y + s, p.stroke);
              cv.fill(p.x, p.y + p.h - s, p.x + p.w, p.y + p.h, p.stroke);
              cv.fill(p.x, p.y, p.x + s, p.y + p.h, p.stroke);
              cv.fill(p.x + p.w - s, p.y, p.x + p.w, p.y + p.h, p.stroke);
            }
          } else if constexpr (std::is_same_v<T, DotPrim>) {
            cv.disc(p.cx, p.cy, p.r, p.fill);
          } else {
            cv.text(p);
          }
        },
        prim);
  }
  return cv.pixels();
}

void write_png(const Figure& figure, const std::string& path) {
  const std::vector<uint8_t> px = rasterize(figure);
  if (!stbi_write_png(path.c_str(), figure.width, figure.height, 3, px.data(), figure.width * 3))
    throw std::runtime_error("plot: cannot write " + path);
}

}  // namespace emu::plot
