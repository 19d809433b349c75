// The layout shared by the SVG and PNG back-ends of plot/plot.h: each plot is
// laid out once into a Figure of primitives (lines, polylines, rectangles,
// dots, text) in pixel coordinates, y down; svg.cpp writes them as SVG
// elements and png.cpp rasterises them, so both files place every tick,
// label and cell at the same position.
//
// Text metrics are those of the PNG bitmap font (plot/font.h): a glyph
// cell is 6 x 11 units times the text's integer scale; the SVG writer sets
// textLength so that its monospace text spans the same width.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "plot/plot.h"

namespace emu::plot {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
  bool operator!=(const Rgb& o) const { return !(*this == o); }
};

enum class Anchor : uint8_t { Start, Middle, End };

struct LinePrim {
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  Rgb color;
  double width = 1;
  bool dashed = false;
};

struct PathPrim {  // an open polyline
  std::vector<std::pair<double, double>> points;
  Rgb color;
  double width = 2;
  bool dashed = false;
};

struct RectPrim {
  double x = 0, y = 0, w = 0, h = 0;
  bool filled = true;
  Rgb fill;
  bool stroked = false;  // the outline lies inside the rectangle
  Rgb stroke;
  double stroke_width = 1;
  std::string tag;  // e.g. "cell 2 3" (column, row), "colorbar", "baseline"; an SVG class
};

struct DotPrim {  // a filled disc (line-plot markers)
  double cx = 0, cy = 0, r = 0;
  Rgb fill;
};

// (x, y) is the anchor point: horizontally at the start, middle or end of the
// text, vertically at the middle of the capital height. Vertical text reads
// bottom to top (rotated 90 degrees counter-clockwise about the anchor).
struct TextPrim {
  double x = 0, y = 0;
  std::string text;
  int scale = 2;
  Anchor anchor = Anchor::Start;
  bool vertical = false;
  Rgb color;
  std::string tag;
};

using Prim = std::variant<LinePrim, PathPrim, RectPrim, DotPrim, TextPrim>;

struct Figure {
  int width = 0, height = 0;
  Rgb background{255, 255, 255};
  std::vector<Prim> prims;  // drawn in order
};

Figure layout(const LinePlot& plot);
Figure layout(const Heatmap& plot);
Figure layout(const BarChart& plot);

// The heatmaps' colour scale (viridis: dark purple through teal to yellow,
// perceptually uniform), t in [0, 1] (clamped), and a text colour readable on it.
Rgb colour_scale(double t);
Rgb text_colour_on(Rgb background);
// The fill of a heatmap cell with `value` (grey when NaN) on the range [lo, hi]
// the heatmap uses (heatmap_range).
Rgb heatmap_cell_colour(double value, double lo, double hi);
std::pair<double, double> heatmap_range(const Heatmap& plot);
// The colour of missing heatmap cells and of the i-th series/group.
Rgb missing_colour();
Rgb series_colour(size_t i);

// Width and height in pixels of one line of text at `scale` (cap height for the height).
double text_width(const std::string& text, int scale);
double text_cap_height(int scale);

// About `target` round tick values covering [lo, hi] (1, 2, 2.5 or 5 times a
// power of ten); the first tick <= lo and the last >= hi.
std::vector<double> nice_ticks(double lo, double hi, int target);
// A tick's text with as many decimals as the tick step needs ("0.25", "1e+06").
std::string tick_text(double value, double step);

// The back-ends: SVG text, and RGB pixels (width * height * 3, row-major, top row first).
std::string to_svg(const Figure& figure);
std::vector<uint8_t> rasterize(const Figure& figure);
// rasterize() written as an 8-bit RGB PNG; throws std::runtime_error naming the file.
void write_png(const Figure& figure, const std::string& path);

}  // namespace emu::plot
