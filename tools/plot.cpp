// `emutrain plot`: heatmaps and line plots of a sweep's results.csv or
// aggregate.csv, and training curves of runs' metrics.csv files, written as SVG
// and PNG (the plot library, plot/plot.h; docs/plots.md).
//
//   emutrain plot results.csv --heatmap man,exp [--metric final_test_acc] [--where mode=fp32acc]...
//                 [--baseline 81.5 | --baseline-from RUN_DIR/summary.json] [--out FILE.svg] [--out FILE.png]
//   emutrain plot results.csv --line man [--group exp]
//   emutrain plot RUN1/metrics.csv RUN2/metrics.csv --curves [--metric test_acc] [--x epoch]
//   emutrain plot results.csv --pareto energy_step_pj [--metric final_test_acc] [--label format] [--log-x]
#include "plot/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "tools/commands.h"
#include "train/csv.h"
#include "train/json.h"
#include "train/pareto.h"

namespace emu::cli {
namespace {

namespace fs = std::filesystem;

struct PlotOptions {
  std::vector<std::string> files;
  std::string heatmap, line, group, metric = "final_test_acc", x_column = "epoch", title;
  std::string pareto, label;
  bool curves = false, metric_given = false, log_x = false;
  std::optional<double> min_metric;
  std::vector<std::string> where, out;
  std::optional<double> baseline;
  std::string baseline_from;
};

// A CSV file: header and rows of text cells (read by train/csv.h, so quoted
// cells with commas, quotes and line breaks read back as written).
struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  bool has(const std::string& name) const {
    return std::find(header.begin(), header.end(), name) != header.end();
  }
  // The column's index; a missing column is an error naming the available ones.
  size_t col(const std::string& name, const char* what) const {
    auto it = std::find(header.begin(), header.end(), name);
    if (it != header.end()) return static_cast<size_t>(it - header.begin());
    std::string cols;
    for (const std::string& h : header) cols += (cols.empty() ? "" : ", ") + h;
    throw std::runtime_error(
        fmt::format("plot: {} has no column '{}' ({}); its columns: {}", path, name, what, cols));
  }
};

CsvTable read_csv(const std::string& path) {
  std::vector<train::CsvRecord> records;
  try {
    records = train::read_csv_file(path);
  } catch (const train::CsvError& e) {
    throw std::runtime_error(std::string("plot: ") + e.what());
  }
  if (records.empty()) throw std::runtime_error("plot: " + path + " is empty (expected a CSV header)");
  CsvTable t;
  t.path = path;
  t.header = std::move(records[0].fields);
  for (size_t i = 1; i < records.size(); ++i) {
    if (records[i].fields.size() != t.header.size())
      throw std::runtime_error(fmt::format("plot: {} line {}: {} cells for {} columns", path, records[i].line,
                                           records[i].fields.size(), t.header.size()));
    t.rows.push_back(std::move(records[i].fields));
  }
  return t;
}

// A cell as a number: NaN when empty or not numeric.
double number(const std::string& s) {
  if (s.empty()) return std::nan("");
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' ? v : std::nan("");
}

bool all_numeric(const std::vector<std::string>& v) {
  return std::all_of(v.begin(), v.end(), [](const std::string& s) { return std::isfinite(number(s)); });
}

// "Natural" order: digit runs compare as numbers, so e3 < e10 and m2 < m10.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const double x = std::stod(a.substr(i, i2 - i)), y = std::stod(b.substr(j, j2 - j));
      if (x != y) return x < y;
      i = i2, j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

// Distinct values, numerically sorted when all are numbers, else naturally.
std::vector<std::string> sorted_levels(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (all_numeric(v))
    std::stable_sort(v.begin(), v.end(),
                     [](const std::string& a, const std::string& b) { return number(a) < number(b); });
  else
    std::stable_sort(v.begin(), v.end(), natural_less);
  return v;
}

// --where filters (COLUMN=VALUE, all must hold).
std::vector<const std::vector<std::string>*> filtered_rows(const CsvTable& t,
                                                           const std::vector<std::string>& where) {
  std::vector<std::pair<size_t, std::string>> conds;
  for (const std::string& w : where) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::runtime_error("plot: --where wants COLUMN=VALUE, got '" + w + "'");
    conds.push_back({t.col(w.substr(0, eq), "named by --where"), w.substr(eq + 1)});
  }
  std::vector<const std::vector<std::string>*> rows;
  for (const auto& r : t.rows) {
    bool keep = true;
    for (const auto& [c, v] : conds) keep = keep && r[c] == v;
    if (keep) rows.push_back(&r);
  }
  if (rows.empty())
    throw std::runtime_error("plot: " + t.path + ": no rows" + (where.empty() ? "" : " match --where"));
  return rows;
}

// The metric's column: as named, or aggregate.csv's mean_<metric>.
size_t metric_column(const CsvTable& t, const std::string& metric) {
  if (!t.has(metric) && t.has("mean_" + metric)) return t.col("mean_" + metric, "the metric");
  return t.col(metric, "the metric (--metric)");
}

// The sweep's axis columns: those before `seed` (results.csv, less `point`)
// or before `runs` (aggregate.csv); none for other tables.
std::vector<std::string> axis_columns(const CsvTable& t) {
  std::vector<std::string> axes;
  const char* stop = t.has("seed") ? "seed" : t.has("runs") ? "runs" : nullptr;
  if (!stop) return axes;
  for (const std::string& h : t.header) {
    if (h == stop) break;
    if (h != "point") axes.push_back(h);
  }
  return axes;
}

// Warns when rows pooled into one value differ in another sweep axis.
void warn_pooled_axes(const CsvTable& t, const std::vector<const std::vector<std::string>*>& rows,
                      const std::vector<std::string>& used, std::ostream& err) {
  for (const std::string& a : axis_columns(t)) {
    if (std::find(used.begin(), used.end(), a) != used.end()) continue;
    const size_t c = t.col(a, "axis");
    std::set<std::string> values;
    for (const auto* r : rows) values.insert((*r)[c]);
    if (values.size() < 2) continue;
    std::string list;
    for (const std::string& v : values) list += (list.empty() ? "" : ", ") + v;
    err << fmt::format(
        "plot: note: axis '{}' takes {} values here ({}) and is averaged over; pick one with "
        "--where {}=VALUE\n",
        a, values.size(), list, a);
  }
}

// The baseline of --baseline-from: summary.json of an fp32 run (or its
// directory). final_<split>_acc / best_<split>_acc in percent as results.csv
// writes them, final_<split>_loss as is; metrics.csv columns <split>_acc and
// <split>_loss read as final_<split>_*.
double baseline_from_summary(const std::string& where, std::string metric) {
  std::string path = where;
  if (fs::is_directory(path)) path = (fs::path(path) / "summary.json").string();
  std::ifstream in(path);
  if (!in) throw std::runtime_error("plot: cannot open " + path + " (--baseline-from)");
  std::stringstream ss;
  ss << in.rdbuf();
  const train::Json j = train::parse_json(ss.str());
  if (metric.rfind("mean_", 0) == 0) metric = metric.substr(5);
  if (metric.rfind("final_", 0) != 0 && metric.rfind("best_", 0) != 0) metric = "final_" + metric;
  const size_t u1 = metric.find('_'), u2 = metric.rfind('_');
  const std::string when = metric.substr(0, u1), what = metric.substr(u2 + 1);
  const std::string split = u2 > u1 ? metric.substr(u1 + 1, u2 - u1 - 1) : "";
  const train::Json* section = j.find(when);
  const train::Json* entry = section ? section->find(split) : nullptr;
  const train::Json* value = entry ? entry->find(what) : nullptr;
  if (!value || !value->is_number())
    throw std::runtime_error(fmt::format("plot: {} has no {}.{}.{} for the metric '{}' (--baseline-from)",
                                         path, when, split, what, metric));
  const double v = std::stod(value->text);
  return what == "acc" ? 100 * v : v;
}

std::optional<double> resolve_baseline(const PlotOptions& o, const std::string& metric) {
  if (o.baseline) return o.baseline;
  if (!o.baseline_from.empty()) return baseline_from_summary(o.baseline_from, metric);
  return std::nullopt;
}

// "baseline", or the name of the run --baseline-from reads.
std::string baseline_name(const PlotOptions& o) {
  if (o.baseline_from.empty()) return "baseline";
  fs::path p(o.baseline_from);
  if (p.filename() == "summary.json") p = p.parent_path();
  if (p.filename().empty()) p = p.parent_path();
  return "baseline " + p.filename().string();
}

std::string where_text(const std::vector<std::string>& where) {
  std::string s;
  for (const std::string& w : where) s += (s.empty() ? "" : ", ") + w;
  return s;
}

// File-name-safe suffix text.
std::string slug(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  return s;
}

// --out files, or <input stem>_<what>.svg and .png next to the input.
std::vector<std::string> outputs(const PlotOptions& o, const std::string& what) {
  if (!o.out.empty()) return o.out;
  fs::path in(o.files.front());
  const std::string base = (in.parent_path() / (in.stem().string() + "_" + what)).string();
  return {base + ".svg", base + ".png"};
}

template <class Plot>
int save_all(const Plot& p, const std::vector<std::string>& paths, std::ostream& out) {
  for (const std::string& path : paths) {
    plot::save(p, path);
    out << "wrote " << path << "\n";
  }
  return 0;
}

int run_heatmap(const PlotOptions& o, std::ostream& out, std::ostream& err) {
  const size_t comma = o.heatmap.find(',');
  if (comma == std::string::npos) throw std::runtime_error("plot: --heatmap wants X,Y (two column names)");
  const std::string xc = o.heatmap.substr(0, comma), yc = o.heatmap.substr(comma + 1);
  if (o.files.size() != 1) throw std::runtime_error("plot: --heatmap reads one results.csv or aggregate.csv");
  const CsvTable t = read_csv(o.files[0]);
  const size_t xi = t.col(xc, "the heatmap's x axis"), yi = t.col(yc, "the heatmap's y axis");
  const size_t mi = metric_column(t, o.metric);
  const auto rows = filtered_rows(t, o.where);
  std::vector<std::string> used{xc, yc};
  for (const std::string& w : o.where) used.push_back(w.substr(0, w.find('=')));
  warn_pooled_axes(t, rows, used, err);

  std::vector<std::string> xs, ys;
  for (const auto* r : rows) xs.push_back((*r)[xi]), ys.push_back((*r)[yi]);
  plot::Heatmap h;
  h.x_ticks = sorted_levels(xs);
  h.y_ticks = sorted_levels(ys);
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> sums;  // mean over seeds
  for (const auto* r : rows) {
    auto& s = sums[{(*r)[xi], (*r)[yi]}];
    const double v = number((*r)[mi]);
    if (std::isfinite(v)) s.first += v, ++s.second;
  }
  int max_n = 0;
  for (const std::string& y : h.y_ticks)
    for (const std::string& x : h.x_ticks) {
      auto it = sums.find({x, y});
      const bool have = it != sums.end() && it->second.second > 0;
      h.values.push_back(have ? it->second.first / it->second.second : std::nan(""));
      if (have) max_n = std::max(max_n, it->second.second);
    }
  h.x_label = xc, h.y_label = yc, h.value_label = t.header[mi];
  h.title = o.title.empty() ? t.header[mi] + (max_n > 1 ? fmt::format(" (mean of {} runs)", max_n) : "") +
                                  (o.where.empty() ? "" : ": " + where_text(o.where))
                            : o.title;
  h.baseline = resolve_baseline(o, o.metric);
  if (h.baseline) h.baseline_label = baseline_name(o);
  std::string what = "heatmap_" + slug(xc) + "_" + slug(yc);
  for (const std::string& w : o.where) what += "_" + slug(w);
  return save_all(h, outputs(o, what), out);
}

int run_line(const PlotOptions& o, std::ostream& out, std::ostream& err) {
  if (o.files.size() != 1) throw std::runtime_error("plot: --line reads one results.csv or aggregate.csv");
  const CsvTable t = read_csv(o.files[0]);
  const size_t xi = t.col(o.line, "the x axis (--line)");
  const size_t gi = o.group.empty() ? 0 : t.col(o.group, "the series (--group)");
  const size_t mi = metric_column(t, o.metric);
  const auto rows = filtered_rows(t, o.where);
  std::vector<std::string> used{o.line};
  if (!o.group.empty()) used.push_back(o.group);
  for (const std::string& w : o.where) used.push_back(w.substr(0, w.find('=')));
  warn_pooled_axes(t, rows, used, err);

  std::vector<std::string> xs, gs;
  for (const auto* r : rows) xs.push_back((*r)[xi]), gs.push_back(o.group.empty() ? "" : (*r)[gi]);
  const std::vector<std::string> xl = sorted_levels(xs), gl = sorted_levels(gs);
  const bool numeric = all_numeric(xl);
  plot::LinePlot p;
  if (!numeric) p.x_tick_labels = xl;
  for (const std::string& g : gl) {
    plot::Series s;
    s.label = o.group.empty() ? "" : o.group + "=" + g;
    s.markers = true;
    for (size_t k = 0; k < xl.size(); ++k) {
      double sum = 0;
      int n = 0;
      bool present = false;
      for (const auto* r : rows)
        if ((*r)[xi] == xl[k] && (o.group.empty() || (*r)[gi] == g)) {
          present = true;
          const double v = number((*r)[mi]);
          if (std::isfinite(v)) sum += v, ++n;
        }
      if (!present) continue;
      s.x.push_back(numeric ? number(xl[k]) : static_cast<double>(k));
      s.y.push_back(n > 0 ? sum / n : std::nan(""));
    }
    p.series.push_back(std::move(s));
  }
  p.x_label = o.line, p.y_label = t.header[mi];
  p.title = o.title.empty() ? t.header[mi] + " over " + o.line + (o.group.empty() ? "" : " by " + o.group) +
                                  (o.where.empty() ? "" : ": " + where_text(o.where))
                            : o.title;
  p.baseline_y = resolve_baseline(o, o.metric);
  if (p.baseline_y) p.baseline_label = fmt::format("{} {:.4g}", baseline_name(o), *p.baseline_y);
  std::string what = "line_" + slug(o.line) + (o.group.empty() ? "" : "_by_" + slug(o.group));
  for (const std::string& w : o.where) what += "_" + slug(w);
  return save_all(p, outputs(o, what), out);
}

int run_curves(const PlotOptions& o, std::ostream& out) {
  const std::string column = o.metric_given ? o.metric : "test_acc";
  const bool percent = column.size() > 4 && column.compare(column.size() - 4, 4, "_acc") == 0;
  plot::LinePlot p;
  for (const std::string& f : o.files) {
    const CsvTable t = read_csv(f);
    const size_t xi = t.col(o.x_column, "the x axis (--x)"), ci = t.col(column, "the curve (--metric)");
    plot::Series s;
    const fs::path dir = fs::path(f).parent_path();
    s.label = dir.empty() ? fs::path(f).stem().string() : dir.filename().string();
    for (const auto& r : t.rows) {
      const double x = number(r[xi]), y = number(r[ci]);
      if (std::isfinite(x) && std::isfinite(y)) s.x.push_back(x), s.y.push_back(percent ? 100 * y : y);
    }
    s.markers = s.x.size() <= 30;
    p.series.push_back(std::move(s));
  }
  if (p.series.size() == 1 && o.baseline_from.empty() && !o.baseline) p.series[0].label.clear();
  p.x_label = o.x_column;
  p.y_label = percent ? column + " (%)" : column;
  p.title = o.title.empty() ? "training curves: " + column : o.title;
  p.baseline_y = resolve_baseline(o, column);
  if (p.baseline_y) p.baseline_label = fmt::format("{} {:.4g}", baseline_name(o), *p.baseline_y);
  PlotOptions where = o;
  if (o.out.empty()) {  // next to the first metrics.csv: <dir>/curves_<column>
    fs::path in(o.files.front());
    const std::string base = (in.parent_path() / ("curves_" + slug(column))).string();
    where.out = {base + ".svg", base + ".png"};
  }
  return save_all(p, where.out, out);
}

// Accuracy against a cost column (docs/cost.md): one point per label (the mean
// over its rows, e.g. seeds), the Pareto front (cheapest for its accuracy) drawn
// as a line and listed on the terminal.
int run_pareto(const PlotOptions& o, std::ostream& out, std::ostream& err) {
  if (o.files.size() != 1) throw std::runtime_error("plot: --pareto reads one results.csv or aggregate.csv");
  const CsvTable t = read_csv(o.files[0]);
  std::string cost = o.pareto;
  if (cost == "energy") cost = "energy_step_pj";
  if (cost == "area") cost = "area_um2";
  const size_t ci = t.col(cost, "the cost axis (--pareto; the sweep's cost columns, docs/cost.md)");
  const size_t mi = metric_column(t, o.metric);
  const auto rows = filtered_rows(t, o.where);
  // Labels: --label's column, else every axis column's value joined by spaces.
  std::vector<size_t> label_cols;
  if (!o.label.empty())
    label_cols.push_back(t.col(o.label, "the point labels (--label)"));
  else
    for (const std::string& a : axis_columns(t)) label_cols.push_back(t.col(a, "axis"));
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::pair<double, int>, std::pair<double, int>>>
      sums;  // label -> (cost, metric)
  for (const auto* r : rows) {
    std::string label;
    for (size_t c : label_cols) label += (label.empty() ? "" : " ") + (*r)[c];
    if (!sums.count(label)) order.push_back(label);
    auto& s = sums[label];
    const double x = number((*r)[ci]), y = number((*r)[mi]);
    if (std::isfinite(x)) s.first.first += x, ++s.first.second;
    if (std::isfinite(y)) s.second.first += y, ++s.second.second;
  }
  std::vector<train::ParetoPoint> pts;
  plot::Series all;
  all.label = "runs";
  all.line = false;
  for (const std::string& l : order) {
    const auto& s = sums[l];
    const double x = s.first.second ? s.first.first / s.first.second : std::nan("");
    const double y = s.second.second ? s.second.first / s.second.second : std::nan("");
    if (!std::isfinite(x) || !std::isfinite(y)) {
      err << fmt::format("plot: note: {} has no {} or no {}; left out\n", l, cost, t.header[mi]);
      continue;
    }
    // Points at the same place share one marker and one label ("fp32 a, fp32 b").
    bool merged = false;
    for (size_t k = 0; k < pts.size() && !merged; ++k)
      if (pts[k].cost == x && pts[k].quality == y) all.point_labels[k] += ", " + l, merged = true;
    if (merged) continue;
    pts.push_back({x, y});
    all.x.push_back(x);
    all.y.push_back(y);
    all.point_labels.push_back(l);
  }
  if (pts.empty())
    throw std::runtime_error("plot: " + t.path + ": no row has both " + cost + " and " + t.header[mi]);
  const std::vector<size_t> front = train::pareto_front(pts);
  plot::Series f;
  f.label = "Pareto front";
  f.markers = true;
  out << fmt::format("Pareto front ({} lowest for its {}):\n", cost, t.header[mi]);
  for (size_t i : front) {
    f.x.push_back(pts[i].cost);
    f.y.push_back(pts[i].quality);
    f.point_labels.push_back("");  // the runs' series already labels every point
    out << fmt::format("  {:<24} {:>14.6g} {:>10.4g}\n", all.point_labels[i], pts[i].cost, pts[i].quality);
  }
  // Front points drawn again on top, in the front's colour, with their label.
  for (size_t k = 0; k < front.size(); ++k) f.point_labels[k] = all.point_labels[front[k]];
  for (size_t i : front) all.point_labels[i].clear();
  // --min-metric: points below it (runs that did not learn) are left out of the
  // drawing so the others spread over the axis; the front was taken over all.
  if (o.min_metric) {
    plot::Series kept = all;
    kept.x.clear(), kept.y.clear(), kept.point_labels.clear();
    for (size_t k = 0; k < all.x.size(); ++k) {
      if (all.y[k] < *o.min_metric) {
        err << fmt::format("plot: note: {} ({} {:.4g}) is below --min-metric {:.4g}; not drawn\n",
                           all.point_labels[k].empty() ? std::string("a front point") : all.point_labels[k],
                           t.header[mi], all.y[k], *o.min_metric);
        continue;
      }
      kept.x.push_back(all.x[k]), kept.y.push_back(all.y[k]),
          kept.point_labels.push_back(all.point_labels[k]);
    }
    all = kept;
  }
  plot::LinePlot p;
  p.series = {all, f};
  p.log_x = o.log_x;
  p.x_label = cost + (o.log_x ? " (log scale)" : "");
  p.y_label = t.header[mi];
  p.title = o.title.empty() ? t.header[mi] + " against " + cost + ": Pareto front" +
                                  (o.where.empty() ? "" : " (" + where_text(o.where) + ")")
                            : o.title;
  p.baseline_y = resolve_baseline(o, o.metric);
  if (p.baseline_y) p.baseline_label = fmt::format("{} {:.4g}", baseline_name(o), *p.baseline_y);
  std::string what = "pareto_" + slug(cost);
  for (const std::string& w : o.where) what += "_" + slug(w);
  return save_all(p, outputs(o, what), out);
}

int run_plot(const PlotOptions& o, std::ostream& out, std::ostream& err) {
  const int modes = !o.heatmap.empty() + !o.line.empty() + o.curves + !o.pareto.empty();
  if (modes != 1)
    throw std::runtime_error("plot: give exactly one of --heatmap X,Y, --line X, --curves or --pareto COST");
  if (o.curves) return run_curves(o, out);
  if (!o.pareto.empty()) return run_pareto(o, out, err);
  if (!o.heatmap.empty()) return run_heatmap(o, out, err);
  return run_line(o, out, err);
}

Runner add_plot(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "plot", "Heatmaps, line plots, training curves and Pareto plots from sweep CSV files (SVG, PNG)");
  auto o = std::make_shared<PlotOptions>();
  cmd->add_option("files", o->files,
                  "results.csv / aggregate.csv of a sweep, or metrics.csv files with --curves")
      ->required();
  cmd->add_option("--heatmap", o->heatmap, "X,Y: the metric over two columns (mean over seeds)");
  cmd->add_option("--line", o->line, "X: the metric over one column");
  cmd->add_option("--group", o->group, "With --line: one series per value of this column");
  cmd->add_flag("--curves", o->curves, "Training curves of metrics.csv files (one series per file)");
  cmd->add_option("--pareto", o->pareto,
                  "COST: the metric against a cost column (energy = energy_step_pj, area = area_um2, or any "
                  "column), Pareto front marked and labelled");
  cmd->add_option("--label", o->label,
                  "With --pareto: the column that labels the points (default: the axes)");
  cmd->add_flag("--log-x", o->log_x, "With --pareto: a logarithmic cost axis");
  cmd->add_option("--min-metric", o->min_metric,
                  "With --pareto: leave points whose metric is below this out of the drawing (noted)");
  CLI::Option* metric = cmd->add_option("--metric", o->metric,
                                        "Column to plot (default final_test_acc; with --curves test_acc)");
  cmd->add_option("--x", o->x_column, "With --curves: the x column (epoch or step; default epoch)");
  cmd->add_option("--where", o->where, "COLUMN=VALUE: keep only these rows (repeatable)");
  cmd->add_option("--baseline", o->baseline, "Baseline value (heatmap: outline cells >= it; lines: dashed)");
  cmd->add_option("--baseline-from", o->baseline_from,
                  "Take the baseline from an fp32 run's summary.json (or its dir)");
  cmd->add_option("--title", o->title, "Title (default: from the metric and filters)");
  cmd->add_option("--out", o->out, "Output file(s), .svg or .png (default: both, next to the input)");
  return [o, metric]() {
    o->metric_given = metric->count() > 0;
    return run_plot(*o, std::cout, std::cerr);
  };
}

EMU_COMMAND("plot", add_plot);

}  // namespace
}  // namespace emu::cli
