// Layout of line plots, heatmaps and bar charts into Figures of primitives
// (plot/layout.h), shared by the SVG and PNG back-ends.
#include "plot/layout.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "plot/font.h"

namespace emu::plot {
namespace {

constexpr Rgb kText{25, 25, 25};
constexpr Rgb kAxis{60, 60, 60};
constexpr Rgb kGrid{228, 228, 228};
constexpr Rgb kBaselineLine{90, 90, 90};   // the dashed line of a LinePlot
constexpr Rgb kBaselineCell{228, 26, 28};  // the outline of heatmap cells at or above the baseline
constexpr int kTitleScale = 3, kLabelScale = 2, kTickScale = 2;
constexpr double kPad = 16;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// viridis (matplotlib's default colour map) at 16 evenly spaced points, as
// published by R's viridisLite::viridis(16); linear interpolation between them.
constexpr Rgb kViridis[16] = {{0x44, 0x01, 0x54}, {0x48, 0x1a, 0x6c}, {0x47, 0x2f, 0x7d}, {0x41, 0x44, 0x87},
                              {0x39, 0x56, 0x8c}, {0x31, 0x68, 0x8e}, {0x2a, 0x78, 0x8e}, {0x23, 0x88, 0x8e},
                              {0x1f, 0x98, 0x8b}, {0x22, 0xa8, 0x84}, {0x35, 0xb7, 0x79}, {0x54, 0xc5, 0x68},
                              {0x7a, 0xd1, 0x51}, {0xa5, 0xdb, 0x36}, {0xd2, 0xe2, 0x1b}, {0xfd, 0xe7, 0x25}};

// Matplotlib's "tab10": distinct hues for series and bar groups.
constexpr Rgb kSeries[10] = {{31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
                             {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {127, 127, 127},
                             {188, 189, 34},  {23, 190, 207}};

template <class T>
void add(Figure& f, T p) {
  f.prims.emplace_back(std::in_place_type<T>, std::move(p));
}

void text(Figure& f, double x, double y, std::string s, int scale, Anchor a, Rgb c = kText,
          bool vertical = false, std::string tag = "") {
  if (s.empty()) return;
  add(f, TextPrim{x, y, std::move(s), scale, a, vertical, c, std::move(tag)});
}

void line(Figure& f, double x1, double y1, double x2, double y2, Rgb c, double w = 1, bool dashed = false) {
  add(f, LinePrim{x1, y1, x2, y2, c, w, dashed});
}

void fill_rect(Figure& f, double x, double y, double w, double h, Rgb c, std::string tag = "") {
  RectPrim r;
  r.x = x, r.y = y, r.w = w, r.h = h;
  r.fill = c;
  r.tag = std::move(tag);
  add(f, std::move(r));
}

void stroke_rect(Figure& f, double x, double y, double w, double h, Rgb c, double width, std::string tag = "",
                 const Rgb* fill = nullptr) {
  RectPrim r;
  r.x = x, r.y = y, r.w = w, r.h = h;
  r.filled = fill != nullptr;
  if (fill) r.fill = *fill;
  r.stroked = true;
  r.stroke = c;
  r.stroke_width = width;
  r.tag = std::move(tag);
  add(f, std::move(r));
}

double max_width(const std::vector<std::string>& texts, int scale) {
  double w = 0;
  for (const std::string& t : texts) w = std::max(w, text_width(t, scale));
  return w;
}

// A title in the largest scale that fits `width` (at least the label scale).
int title_scale(const std::string& title, double width) {
  return text_width(title, kTitleScale) <= width ? kTitleScale : kLabelScale;
}

// A numeric axis: ticks and their texts, and the mapping of values to pixels.
struct Axis {
  double lo = 0, hi = 1;  // in axis units (log10 of the value on a log axis)
  bool log = false;
  std::vector<double> ticks;  // axis units
  std::vector<std::string> labels;

  double unit(double v) const { return log ? (v > 0 ? std::log10(v) : kNaN) : v; }
  // v mapped onto [p0, p1] (p0 at lo).
  double map(double v, double p0, double p1) const { return p0 + (unit(v) - lo) / (hi - lo) * (p1 - p0); }
};

Axis numeric_axis(double vmin, double vmax, bool log, int target) {
  Axis a;
  a.log = log;
  if (!std::isfinite(vmin) || !std::isfinite(vmax)) vmin = 0, vmax = 1;
  if (log) {
    double l0 = std::floor(std::log10(vmin)), l1 = std::ceil(std::log10(vmax));
    if (l1 <= l0) l1 = l0 + 1;
    const double step = std::max(1.0, std::ceil((l1 - l0) / std::max(1, target - 1)));
    l0 = std::floor(l0 / step) * step;
    l1 = std::ceil(l1 / step) * step;
    for (double t = l0; t <= l1 + 1e-9; t += step) {
      a.ticks.push_back(t);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", std::pow(10.0, t));
      a.labels.push_back(buf);
    }
    a.lo = l0, a.hi = l1;
    return a;
  }
  a.ticks = nice_ticks(vmin, vmax, target);
  const double step = a.ticks.size() > 1 ? a.ticks[1] - a.ticks[0] : 1;
  for (double t : a.ticks) a.labels.push_back(tick_text(t, step));
  a.lo = a.ticks.front(), a.hi = a.ticks.back();
  return a;
}

// The widest label of `a` fits between neighbouring ticks `spacing` apart.
bool labels_fit(const Axis& a, double length) {
  if (a.ticks.size() < 2) return true;
  const double spacing = length / (a.hi - a.lo) * (a.ticks[1] - a.ticks[0]);
  return max_width(a.labels, kTickScale) + 12 <= spacing;
}

// Finite min and max of values (NaN, NaN when there is none).
std::pair<double, double> finite_range(const std::vector<double>& v, bool positive_only = false) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double x : v)
    if (std::isfinite(x) && (!positive_only || x > 0)) lo = std::min(lo, x), hi = std::max(hi, x);
  if (lo > hi) return {kNaN, kNaN};
  return {lo, hi};
}

// The plot box, ticks and grid, tick labels and axis labels of a 2-D plot.
// x_labels: categorical ticks at 0..n-1 (then x is unused).
void draw_axes(Figure& f, double x0, double y0, double x1, double y1, const Axis& x, const Axis& y,
               const std::string& x_label, const std::string& y_label, double y_label_x, bool x_grid) {
  for (size_t i = 0; i < y.ticks.size(); ++i) {
    const double py = y1 + (y.ticks[i] - y.lo) / (y.hi - y.lo) * (y0 - y1);
    line(f, x0, py, x1, py, kGrid);
    line(f, x0 - 6, py, x0, py, kAxis);
    text(f, x0 - 10, py, y.labels[i], kTickScale, Anchor::End);
  }
  // Thin out x tick labels that would overlap (categorical axes keep every tick mark).
  size_t every = 1;
  if (x.ticks.size() > 1) {
    const double spacing = (x1 - x0) / (x.hi - x.lo) * (x.ticks[1] - x.ticks[0]);
    const double need = max_width(x.labels, kTickScale) + 12;
    every = static_cast<size_t>(std::max(1.0, std::ceil(need / std::max(spacing, 1.0))));
  }
  for (size_t i = 0; i < x.ticks.size(); ++i) {
    const double px = x0 + (x.ticks[i] - x.lo) / (x.hi - x.lo) * (x1 - x0);
    if (x_grid) line(f, px, y0, px, y1, kGrid);
    line(f, px, y1, px, y1 + 6, kAxis);
    if (i % every == 0) text(f, px, y1 + 18, x.labels[i], kTickScale, Anchor::Middle);
  }
  stroke_rect(f, x0, y0, x1 - x0, y1 - y0, kAxis, 1, "frame");
  text(f, (x0 + x1) / 2, y1 + 46, x_label, kLabelScale, Anchor::Middle);
  text(f, y_label_x, (y0 + y1) / 2, y_label, kLabelScale, Anchor::Middle, kText, true);
}

struct LegendEntry {
  std::string label;
  Rgb color;
  bool dashed = false;
  bool box = false;  // a filled square (bars) instead of a line sample
  bool dot = false;  // a marker (scatter series) instead of a line sample
};

double legend_width(const std::vector<LegendEntry>& entries) {
  if (entries.empty()) return 0;
  std::vector<std::string> labels;
  for (const LegendEntry& e : entries) labels.push_back(e.label);
  return max_width(labels, kLabelScale) + 64;
}

void draw_legend(Figure& f, double x, double y, const std::vector<LegendEntry>& entries) {
  if (entries.empty()) return;
  const double w = legend_width(entries) - 16, row = 26;
  const Rgb white{255, 255, 255};
  stroke_rect(f, x, y, w, row * entries.size() + 12, {200, 200, 200}, 1, "legend", &white);
  for (size_t i = 0; i < entries.size(); ++i) {
    const double cy = y + 6 + row * (i + 0.5);
    if (entries[i].box)
      fill_rect(f, x + 10, cy - 7, 22, 14, entries[i].color);
    else if (entries[i].dot)
      add(f, DotPrim{x + 21, cy, 5, entries[i].color});
    else
      line(f, x + 8, cy, x + 34, cy, entries[i].color, 3, entries[i].dashed);
    text(f, x + 42, cy, entries[i].label, kLabelScale, Anchor::Start);
  }
}

}  // namespace

double text_width(const std::string& s, int scale) {
  return s.empty() ? 0 : static_cast<double>(s.size() * font::kCellW - 1) * scale;
}

double text_cap_height(int scale) { return static_cast<double>(font::kCapH) * scale; }

Rgb colour_scale(double t) {
  if (!(t > 0)) t = 0;  // NaN too
  if (t > 1) t = 1;
  const double pos = t * 15;
  const int i = std::min(14, static_cast<int>(pos));
  const double u = pos - i;
  auto mix = [&](uint8_t a, uint8_t b) { return static_cast<uint8_t>(std::lround(a + (b - a) * u)); };
  return {mix(kViridis[i].r, kViridis[i + 1].r), mix(kViridis[i].g, kViridis[i + 1].g),
          mix(kViridis[i].b, kViridis[i + 1].b)};
}

Rgb text_colour_on(Rgb c) {
  const double luma = (0.299 * c.r + 0.587 * c.g + 0.114 * c.b) / 255;
  return luma < 0.55 ? Rgb{255, 255, 255} : Rgb{0, 0, 0};
}

Rgb missing_colour() { return {200, 200, 200}; }

Rgb series_colour(size_t i) { return kSeries[i % 10]; }

std::pair<double, double> heatmap_range(const Heatmap& plot) {
  auto [lo, hi] = finite_range(plot.values);
  if (!std::isfinite(lo)) return {0, 1};
  if (hi == lo) hi = lo + 1;
  return {lo, hi};
}

Rgb heatmap_cell_colour(double value, double lo, double hi) {
  if (!std::isfinite(value)) return missing_colour();
  return colour_scale((value - lo) / (hi - lo));
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) {
    const double d = lo == 0 || !std::isfinite(lo) ? 1 : std::fabs(lo) * 0.1;
    if (!std::isfinite(lo)) lo = 0;
    hi = lo + d, lo -= d;
  }
  target = std::max(target, 2);
  const double raw = (hi - lo) / (target - 1);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / p;
  const double step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last + 0.5; ++k) ticks.push_back(k * step);
  return ticks;
}

std::string tick_text(double value, double step) {
  char buf[48];
  if (value == 0) return "0";
  const double a = std::fabs(value);
  if (a >= 1e6 || a < 1e-4) {
    std::snprintf(buf, sizeof buf, "%g", value);
    return buf;
  }
  int decimals = 0;
  while (decimals < 8) {
    const double s = std::fabs(step) * std::pow(10.0, decimals);
    if (std::fabs(s - std::round(s)) < 1e-6 * std::max(1.0, s)) break;
    ++decimals;
  }
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

Figure layout(const LinePlot& plot) {
  Figure f;
  f.width = 960, f.height = 600;

  // Value ranges (NaN points are gaps and do not count).
  std::vector<double> xs, ys;
  for (const Series& s : plot.series) {
    xs.insert(xs.end(), s.x.begin(), s.x.end());
    ys.insert(ys.end(), s.y.begin(), s.y.end());
  }
  if (plot.baseline_y) ys.push_back(*plot.baseline_y);
  auto [xmin, xmax] = finite_range(xs, plot.log_x);
  auto [ymin, ymax] = finite_range(ys, plot.log_y);
  const bool categorical = !plot.x_tick_labels.empty();

  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < plot.series.size(); ++i)
    if (!plot.series[i].label.empty())
      legend.push_back({plot.series[i].label, series_colour(i), false, false, !plot.series[i].line});
  if (plot.baseline_y)
    legend.push_back({plot.baseline_label.empty() ? "baseline" : plot.baseline_label, kBaselineLine, true});

  Axis y = numeric_axis(ymin, ymax, plot.log_y, 7);
  Axis x;
  if (categorical) {
    x.lo = -0.5, x.hi = static_cast<double>(plot.x_tick_labels.size()) - 0.5;
    for (size_t i = 0; i < plot.x_tick_labels.size(); ++i) x.ticks.push_back(static_cast<double>(i));
    x.labels = plot.x_tick_labels;
  }

  const double legend_w = legend_width(legend);
  // Wider than 960 only when the legend or the title needs it (the plot box keeps >= 480).
  f.width = static_cast<int>(std::ceil(
      std::max({960.0, 600 + legend_w + 2 * kPad + 120, text_width(plot.title, kLabelScale) + 2 * kPad})));
  const int tscale = title_scale(plot.title, f.width - 2 * kPad);
  const double top = plot.title.empty() ? 24 : 24 + text_cap_height(tscale) + 24;
  const double left = kPad + (plot.y_label.empty() ? 0 : 30) + max_width(y.labels, kTickScale) + 12;
  const double bottom = 24 + (plot.x_label.empty() ? 0 : 28) + kPad;
  const double x0 = left, x1 = f.width - kPad - (legend_w > 0 ? legend_w + 8 : 8);
  const double y0 = top, y1 = f.height - bottom;
  if (!categorical) {
    for (int target = 9; target >= 2; --target) {
      x = numeric_axis(xmin, xmax, plot.log_x, target);
      if (labels_fit(x, x1 - x0)) break;
    }
  }

  fill_rect(f, 0, 0, f.width, f.height, f.background, "background");
  text(f, f.width / 2.0, 24 + text_cap_height(tscale) / 2, plot.title, tscale, Anchor::Middle, kText, false,
       "title");
  draw_axes(f, x0, y0, x1, y1, x, y, plot.x_label, plot.y_label, kPad + 8, true);

  auto px = [&](double v) { return x.map(v, x0, x1); };
  auto py = [&](double v) { return y.map(v, y1, y0); };
  if (plot.baseline_y) {
    const double b = py(*plot.baseline_y);
    if (std::isfinite(b)) line(f, x0, b, x1, b, kBaselineLine, 2, true);
  }
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const Series& s = plot.series[i];
    PathPrim path{{}, series_colour(i), 2.5, false};
    auto flush = [&] {
      if (path.points.size() > 1) add(f, path);
      path.points.clear();
    };
    for (size_t k = 0; k < s.x.size() && s.line; ++k) {
      const double a = px(s.x[k]), b = py(s.y[k]);
      if (!std::isfinite(a) || !std::isfinite(b)) {
        flush();
        continue;
      }
      path.points.push_back({a, b});
    }
    flush();
    const bool lone = s.x.size() == 1;  // a single point shows only as a marker
    if (s.markers || lone || !s.line)
      for (size_t k = 0; k < s.x.size(); ++k) {
        const double a = px(s.x[k]), b = py(s.y[k]);
        if (std::isfinite(a) && std::isfinite(b)) add(f, DotPrim{a, b, 4, series_colour(i)});
      }
  }
  // Point labels in their series' colour, each at the first place around its point
  // (right or left, then further up or down) where it overlaps no label placed
  // before and stays inside the plot box: close points stay readable.
  std::vector<std::array<double, 4>> placed;  // x0, y0, x1, y1 of the labels drawn, and of every marker
  const double th = text_cap_height(kTickScale) + 4;
  for (const Series& s : plot.series)
    if (!s.point_labels.empty())
      for (size_t k = 0; k < s.x.size(); ++k) {
        const double a = px(s.x[k]), b = py(s.y[k]);
        if (std::isfinite(a) && std::isfinite(b)) placed.push_back({a - 7, b - 7, a + 7, b + 7});
      }
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const Series& s = plot.series[i];
    for (size_t k = 0; k < s.point_labels.size() && k < s.x.size(); ++k) {
      const double a = px(s.x[k]), b = py(s.y[k]);
      const std::string& label = s.point_labels[k];
      if (!std::isfinite(a) || !std::isfinite(b) || label.empty()) continue;
      const double w = text_width(label, kTickScale);
      double best_x = a + 7, best_y = b - 10;
      int best_step = 0;
      for (int step = 0; step < 24; ++step) {
        const double dy = (step / 4) * (th + 2) * ((step / 2) % 2 ? 1 : -1) + ((step / 2) % 2 ? 10 : -10);
        const bool r = step % 2 == 0;
        const double lx = r ? a + 7 : a - 7 - w, ly = b + dy;
        bool free = lx >= x0 && lx + w <= x1 && ly - th / 2 >= y0 && ly + th / 2 <= y1;
        for (const auto& p : placed)
          free = free && (lx + w < p[0] || lx > p[2] || ly + th / 2 < p[1] || ly - th / 2 > p[3]);
        if (free) {
          best_x = lx, best_y = ly, best_step = step;
          break;
        }
      }
      placed.push_back({best_x, best_y - th / 2, best_x + w, best_y + th / 2});
      // A label moved off its first places gets a thin leader to its point.
      if (best_step >= 2) {
        const bool left = best_x + w < a;
        line(f, a, b, left ? best_x + w + 2 : best_x - 2, best_y, {150, 150, 150}, 1, false);
      }
      text(f, best_x, best_y, label, kTickScale, Anchor::Start, series_colour(i), false, "point label");
    }
  }
  draw_legend(f, x1 + 16, y0, legend);
  return f;
}

Figure layout(const Heatmap& plot) {
  Figure f;
  const size_t nx = plot.x_ticks.size(), ny = plot.y_ticks.size();
  // Named variables rather than a structured binding: the colour-bar lambda
  // below captures them, which C++17 allows only for variables (clang 14 refuses bindings).
  const std::pair<double, double> range = heatmap_range(plot);
  const double lo = range.first, hi = range.second;

  std::vector<std::string> cell_text(plot.values.size());
  for (size_t i = 0; i < plot.values.size(); ++i) {
    if (!std::isfinite(plot.values[i])) {
      cell_text[i] = "-";
      continue;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, plot.value_format.c_str(), plot.values[i]);
    cell_text[i] = buf;
  }
  const double cell_w =
      std::max({60.0, max_width(cell_text, kTickScale) + 16, max_width(plot.x_ticks, kTickScale) + 20});
  const double cell_h = 40;
  const double gw = cell_w * nx, gh = cell_h * ny;

  // Colour bar ticks: round values inside [lo, hi].
  std::vector<double> bar_ticks;
  for (double t : nice_ticks(lo, hi, 6))
    if (t >= lo - 1e-9 * (hi - lo) && t <= hi + 1e-9 * (hi - lo)) bar_ticks.push_back(t);
  std::vector<std::string> bar_labels;
  const double bar_step = bar_ticks.size() > 1 ? bar_ticks[1] - bar_ticks[0] : hi - lo;
  for (double t : bar_ticks) bar_labels.push_back(tick_text(t, bar_step));

  std::string note;
  if (plot.baseline) {
    char buf[64];
    std::snprintf(buf, sizeof buf, plot.value_format.c_str(), *plot.baseline);
    note = std::string("outlined: ") + (plot.value_label.empty() ? "value" : plot.value_label) + " >= " + buf;
    note += " (" + (plot.baseline_label.empty() ? std::string("baseline") : plot.baseline_label) + ")";
  }

  const double left = kPad + (plot.y_label.empty() ? 0 : 30) + max_width(plot.y_ticks, kTickScale) + 12;
  const double bar_x = left + gw + 28, bar_w = 24;
  const double right =
      bar_x + bar_w + 10 + max_width(bar_labels, kTickScale) + (plot.value_label.empty() ? 0 : 34) + kPad;
  const double content_w = std::max({right, text_width(plot.title, kLabelScale) + 2 * kPad,
                                     left + text_width(note, kLabelScale) + 40 + kPad});
  const int tscale = title_scale(plot.title, content_w - 2 * kPad);
  const double top = plot.title.empty() ? 24 : 24 + text_cap_height(tscale) + 24;
  const double bar_h = std::max({gh, 160.0, text_width(plot.value_label, kLabelScale) + 16});
  const double y0 = top, y1 = top + gh;
  double bottom = y1 + 24 + (plot.x_label.empty() ? 0 : 28) + (note.empty() ? 0 : 32);
  bottom = std::max(bottom, top + bar_h) + kPad;
  f.width = static_cast<int>(std::ceil(content_w));
  f.height = static_cast<int>(std::ceil(bottom));

  fill_rect(f, 0, 0, f.width, f.height, f.background, "background");
  const double title_x = left + gw / 2 < f.width / 2.0 ? f.width / 2.0 : left + gw / 2;
  text(f, std::min(title_x, f.width - kPad - text_width(plot.title, tscale) / 2),
       24 + text_cap_height(tscale) / 2, plot.title, tscale, Anchor::Middle, kText, false, "title");

  // Cells: row 0 at the bottom.
  for (size_t yi = 0; yi < ny; ++yi)
    for (size_t xi = 0; xi < nx; ++xi) {
      const size_t i = yi * nx + xi;
      const double cx = left + xi * cell_w, cy = y0 + (ny - 1 - yi) * cell_h;
      const Rgb c = heatmap_cell_colour(plot.values[i], lo, hi);
      fill_rect(f, cx, cy, cell_w, cell_h, c, "cell " + std::to_string(xi) + " " + std::to_string(yi));
      text(f, cx + cell_w / 2, cy + cell_h / 2, cell_text[i], kTickScale, Anchor::Middle,
           std::isfinite(plot.values[i]) ? text_colour_on(c) : Rgb{90, 90, 90});
    }
  // Thin white separators, then baseline outlines on top.
  for (size_t xi = 1; xi < nx; ++xi) line(f, left + xi * cell_w, y0, left + xi * cell_w, y1, {255, 255, 255});
  for (size_t yi = 1; yi < ny; ++yi)
    line(f, left, y0 + yi * cell_h, left + gw, y0 + yi * cell_h, {255, 255, 255});
  if (plot.baseline)
    for (size_t yi = 0; yi < ny; ++yi)
      for (size_t xi = 0; xi < nx; ++xi) {
        const double v = plot.values[yi * nx + xi];
        if (std::isfinite(v) && v >= *plot.baseline)
          stroke_rect(f, left + xi * cell_w, y0 + (ny - 1 - yi) * cell_h, cell_w, cell_h, kBaselineCell, 3,
                      "baseline " + std::to_string(xi) + " " + std::to_string(yi));
      }

  // Tick labels and axis labels.
  for (size_t yi = 0; yi < ny; ++yi)
    text(f, left - 10, y0 + (ny - 1 - yi + 0.5) * cell_h, plot.y_ticks[yi], kTickScale, Anchor::End);
  for (size_t xi = 0; xi < nx; ++xi)
    text(f, left + (xi + 0.5) * cell_w, y1 + 18, plot.x_ticks[xi], kTickScale, Anchor::Middle);
  text(f, left + gw / 2, y1 + 46, plot.x_label, kLabelScale, Anchor::Middle);
  text(f, kPad + 8, (y0 + y1) / 2, plot.y_label, kLabelScale, Anchor::Middle, kText, true);

  // Colour bar (top = hi), its ticks, the baseline mark, the value label.
  const int slices = 64;
  const double by0 = y0, by1 = y0 + bar_h;
  for (int s = 0; s < slices; ++s) {
    const double t = (slices - 1 - s + 0.5) / slices;
    fill_rect(f, bar_x, by0 + s * bar_h / slices, bar_w, bar_h / slices + 0.01, colour_scale(t), "colorbar");
  }
  stroke_rect(f, bar_x, by0, bar_w, bar_h, kAxis, 1);
  auto bar_y = [&](double v) { return by1 - (v - lo) / (hi - lo) * bar_h; };
  for (size_t i = 0; i < bar_ticks.size(); ++i) {
    const double ty = bar_y(bar_ticks[i]);
    line(f, bar_x + bar_w, ty, bar_x + bar_w + 5, ty, kAxis);
    text(f, bar_x + bar_w + 9, ty, bar_labels[i], kTickScale, Anchor::Start);
  }
  if (plot.baseline && *plot.baseline >= lo && *plot.baseline <= hi) {
    const double ty = bar_y(*plot.baseline);
    line(f, bar_x - 6, ty, bar_x + bar_w, ty, kBaselineCell, 3);
  }
  text(f, bar_x + bar_w + 10 + max_width(bar_labels, kTickScale) + 22, (by0 + by1) / 2, plot.value_label,
       kLabelScale, Anchor::Middle, kText, true);

  if (!note.empty()) {
    const double ny_ = y1 + 24 + (plot.x_label.empty() ? 0 : 28) + 20;
    stroke_rect(f, left, ny_ - 9, 26, 18, kBaselineCell, 3, "baseline-legend");
    text(f, left + 36, ny_, note, kLabelScale, Anchor::Start);
  }
  return f;
}

Figure layout(const BarChart& plot) {
  Figure f;
  const size_t nc = plot.categories.size(), ng = plot.values.size();
  std::vector<double> all;
  for (const auto& g : plot.values) all.insert(all.end(), g.begin(), g.end());
  auto [vmin, vmax] = finite_range(all, plot.log_y);
  if (!std::isfinite(vmin)) vmin = plot.log_y ? 0.1 : 0, vmax = 1;
  // On a log axis half the smallest value still gets a visible bar when it sits on a decade.
  Axis y = plot.log_y ? numeric_axis(vmin / 2, vmax, true, 7)
                      : numeric_axis(std::min(0.0, vmin), std::max(0.0, vmax), false, 7);

  std::vector<LegendEntry> legend;
  for (size_t g = 0; g < plot.group_labels.size(); ++g)
    if (!plot.group_labels[g].empty())
      legend.push_back({plot.group_labels[g], series_colour(g), false, true});
  if (ng <= 1 && legend.size() == 1 && plot.y_label == legend[0].label) legend.clear();

  const double slot = std::max(ng * 24.0 + 24, max_width(plot.categories, kTickScale) + 16);
  const double left = kPad + (plot.y_label.empty() ? 0 : 30) + max_width(y.labels, kTickScale) + 12;
  const double pw = std::max(slot * nc, 360.0);
  const double legend_w = legend_width(legend);
  const double content_w = std::max(left + pw + kPad + (legend_w > 0 ? legend_w + 8 : 0),
                                    text_width(plot.title, kLabelScale) + 2 * kPad);
  const int tscale = title_scale(plot.title, content_w - 2 * kPad);
  const double top = plot.title.empty() ? 24 : 24 + text_cap_height(tscale) + 24;
  const double ph = 380;
  f.width = static_cast<int>(std::ceil(content_w));
  f.height = static_cast<int>(std::ceil(top + ph + 24 + (plot.x_label.empty() ? 0 : 28) + kPad));
  const double x0 = left, x1 = left + pw, y0 = top, y1 = top + ph;

  fill_rect(f, 0, 0, f.width, f.height, f.background, "background");
  text(f, f.width / 2.0, 24 + text_cap_height(tscale) / 2, plot.title, tscale, Anchor::Middle, kText, false,
       "title");
  Axis x;
  x.lo = -0.5, x.hi = nc - 0.5;
  for (size_t c = 0; c < nc; ++c)
    x.ticks.push_back(static_cast<double>(c)), x.labels.push_back(plot.categories[c]);
  draw_axes(f, x0, y0, x1, y1, x, y, plot.x_label, plot.y_label, kPad + 8, false);

  const double zero = plot.log_y ? y1 : y.map(0, y1, y0);
  const double cw = pw / std::max<size_t>(nc, 1);
  const double bw = (cw - 20) / std::max<size_t>(ng, 1);
  for (size_t g = 0; g < ng; ++g)
    for (size_t c = 0; c < nc && c < plot.values[g].size(); ++c) {
      const double v = plot.values[g][c];
      if (!std::isfinite(v) || (plot.log_y && v <= 0)) continue;
      const double top_y = y.map(v, y1, y0);
      fill_rect(f, x0 + c * cw + 10 + g * bw, std::min(zero, top_y), bw - 2, std::fabs(zero - top_y),
                series_colour(g), "bar " + std::to_string(g) + " " + std::to_string(c));
    }
  if (!plot.log_y && y.lo < 0) line(f, x0, zero, x1, zero, kAxis);
  draw_legend(f, x1 + 16, y0, legend);
  return f;
}

}  // namespace emu::plot
