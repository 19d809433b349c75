// plot::save (plot/plot.h): checks a plot, lays it out once (layout.cpp)
// and writes it as SVG or PNG by the file's extension.
#include <cctype>
#include <fstream>
#include <stdexcept>
#include <string>

#include "plot/layout.h"

namespace emu::plot {
namespace {

std::string extension(const std::string& path) {
  const size_t slash = path.find_last_of('/'), dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

void write(const Figure& fig, const std::string& path) {
  const std::string ext = extension(path);
  if (ext == "svg") {
    std::ofstream out(path, std::ios::trunc);
    out << to_svg(fig);
    out.close();
    if (!out) throw std::runtime_error("plot: cannot write " + path);
  } else if (ext == "png") {
    write_png(fig, path);
  } else {
    throw std::runtime_error("plot: " + path + ": unknown extension (want .svg or .png)");
  }
}

}  // namespace

void save(const LinePlot& plot, const std::string& path) {
  for (const Series& s : plot.series)
    if (s.x.size() != s.y.size())
      throw std::runtime_error("plot: " + path + ": series '" + s.label + "' has " +
                               std::to_string(s.x.size()) + " x values but " + std::to_string(s.y.size()) +
                               " y values");
  write(layout(plot), path);
}

void save(const Heatmap& plot, const std::string& path) {
  if (plot.x_ticks.empty() || plot.y_ticks.empty())
    throw std::runtime_error("plot: " + path + ": heatmap without x or y ticks");
  if (plot.values.size() != plot.x_ticks.size() * plot.y_ticks.size())
    throw std::runtime_error("plot: " + path + ": heatmap has " + std::to_string(plot.values.size()) +
                             " values for " + std::to_string(plot.x_ticks.size()) + " x " +
                             std::to_string(plot.y_ticks.size()) + " cells");
  write(layout(plot), path);
}

void save(const BarChart& plot, const std::string& path) {
  if (plot.values.empty() || plot.categories.empty())
    throw std::runtime_error("plot: " + path + ": bar chart without categories or values");
  for (size_t g = 0; g < plot.values.size(); ++g)
    if (plot.values[g].size() != plot.categories.size())
      throw std::runtime_error(
          "plot: " + path + ": bar group " +
          (g < plot.group_labels.size() ? "'" + plot.group_labels[g] + "'" : std::to_string(g)) + " has " +
          std::to_string(plot.values[g].size()) + " values for " + std::to_string(plot.categories.size()) +
          " categories");
  write(layout(plot), path);
}

}  // namespace emu::plot
