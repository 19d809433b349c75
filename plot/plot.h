// Plots for studies and reports: line plots, heatmaps and bar charts written
// as SVG (vector, text as text) or PNG (rasterised here, stb_image_write, with
// a built-in bitmap font), chosen by the file extension.
//
//   plot::LinePlot p{"tanh pwl:3", "x", "value"};
//   p.series.push_back({"exact", xs, ys});
//   plot::save(p, "tanh.svg");   // or .png
//
// Missing values are NaN (drawn as a gap, or a hatched/grey heatmap cell).
// Errors (unwritable file, unknown extension, mismatched lengths) throw
// std::runtime_error naming the file or the series.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace emu::plot {

struct Series {
  std::string label;
  std::vector<double> x, y;  // same length
  bool markers = false;      // draw a dot at every point
  bool line = true;          // false: markers only (a scatter plot)
  // Text drawn beside each point (empty, or one per point; "" skips a point),
  // e.g. the format of each run in an accuracy-versus-energy plot.
  std::vector<std::string> point_labels = {};
};

struct LinePlot {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool log_x = false, log_y = false;
  std::optional<double> baseline_y;  // a dashed horizontal line, e.g. the fp32 accuracy
  std::string baseline_label;
  // Categorical x axis: when non-empty, x values are indices 0..n-1 and the
  // ticks show these labels (e.g. format names) instead of numbers.
  std::vector<std::string> x_tick_labels;
};

// values[y * x_ticks.size() + x]; row 0 is drawn at the bottom. Each cell shows
// its value as text (value_format, printf style) on a colour scale with a legend.
struct Heatmap {
  std::string title, x_label, y_label, value_label;
  std::vector<std::string> x_ticks, y_ticks;
  std::vector<double> values;
  std::string value_format = "%.1f";
  std::optional<double> baseline;  // cells with value >= baseline are outlined; legend marks it
  std::string baseline_label;
};

struct BarChart {
  std::string title, x_label, y_label;
  std::vector<std::string> categories;
  std::vector<std::string> group_labels;    // one per group of bars (legend); may be one
  std::vector<std::vector<double>> values;  // [group][category]
  bool log_y = false;                       // bars rise from the lowest decade; values <= 0 are left out
};

void save(const LinePlot& plot, const std::string& path);
void save(const Heatmap& plot, const std::string& path);
void save(const BarChart& plot, const std::string& path);

}  // namespace emu::plot
