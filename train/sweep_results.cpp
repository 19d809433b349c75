#include "train/sweep_results.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "train/atomic_file.h"
#include "train/csv.h"
#include "train/json.h"

namespace emu::train {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<double> number_at(const Json& root, std::initializer_list<const char*> path) {
  const Json* j = &root;
  for (const char* k : path) {
    if (!j->is_object()) return std::nullopt;
    j = j->find(k);
    if (!j) return std::nullopt;
  }
  if (!j->is_number()) return std::nullopt;  // null: NaN or infinite
  return std::stod(j->text);
}

std::string percent(const std::optional<double>& fraction) {
  return fraction ? fmt::format("{:.2f}", 100 * *fraction) : "";
}

// `before`, the axis columns, then `after`.
std::string header(const SweepSpec& spec, std::initializer_list<const char*> before,
                   const std::vector<std::string>& after) {
  std::vector<std::string> h(before.begin(), before.end());
  for (const SweepAxis& a : spec.axes) h.push_back(a.name);
  h.insert(h.end(), after.begin(), after.end());
  return csv_row(h);
}

std::string number(double v, const char* spec) { return fmt::format(fmt::runtime(spec), v); }

}  // namespace

std::optional<RunRecord> read_run(const std::string& run_dir) {
  const fs::path dir = run_dir;
  std::optional<RunRecord> marker;
  if (auto text = slurp(dir / kRunStatusFile)) {
    try {
      Json j = parse_json(*text);
      const Json* status = j.find("status");
      if (status && status->is_string()) {
        RunRecord r;
        r.status = status->text;
        if (const Json* reason = j.find("reason"); reason && reason->is_string()) r.reason = reason->text;
        if (auto c = number_at(j, {"exit_code"})) r.exit_code = static_cast<int>(*c);
        r.wall_s = number_at(j, {"wall_s"});
        marker = r;
      }
    } catch (const JsonError&) {
      // A torn marker (the sweep killed while writing it) counts as no marker.
    }
  }
  auto summary_text = slurp(dir / "summary.json");
  if (summary_text) {
    Json s;
    try {
      s = parse_json(*summary_text);
    } catch (const JsonError&) {
      return std::nullopt;  // being written when the run was killed: not finished
    }
    RunRecord r;
    r.status = "ok";
    r.final_train_loss = number_at(s, {"final", "train", "loss"});
    r.final_val_acc = number_at(s, {"final", "val", "acc"});
    r.final_test_acc = number_at(s, {"final", "test", "acc"});
    r.best_val_acc = number_at(s, {"best", "val", "acc"});
    r.best_test_acc = number_at(s, {"best", "test", "acc"});
    if (auto steps = number_at(s, {"steps"})) r.steps = static_cast<int64_t>(*steps);
    r.wall_s = (marker && marker->wall_s) ? marker->wall_s : number_at(s, {"seconds"});
    return r;
  }
  if (marker && (marker->status == "diverged" || marker->status == "failed")) return marker;
  return std::nullopt;
}

void write_run_status(const std::string& run_dir, const RunRecord& r) {
  std::string text = "{\"status\":" + json_quote(r.status) + ",\"reason\":" + json_quote(r.reason) +
                     ",\"exit_code\":" + std::to_string(r.exit_code) +
                     ",\"wall_s\":" + (r.wall_s ? json_number(*r.wall_s) : "null") + "}\n";
  write_file_atomic((fs::path(run_dir) / kRunStatusFile).string(), text);
}

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> names = {"final_test_acc", "final_val_acc", "best_test_acc",
                                                 "best_val_acc", "final_train_loss"};
  return names;
}

std::optional<double> metric_value(const RunRecord& r, const std::string& metric) {
  auto pct = [](const std::optional<double>& f) -> std::optional<double> {
    if (!f) return std::nullopt;
    return 100 * *f;
  };
  if (r.status != "ok") return std::nullopt;
  if (metric == "final_test_acc") return pct(r.final_test_acc);
  if (metric == "final_val_acc") return pct(r.final_val_acc);
  if (metric == "best_test_acc") return pct(r.best_test_acc);
  if (metric == "best_val_acc") return pct(r.best_val_acc);
  if (metric == "final_train_loss") return r.final_train_loss;
  return std::nullopt;
}

std::string results_csv(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                        const std::vector<SweepRun>& runs,
                        const std::vector<std::optional<RunRecord>>& records, const std::string& runs_dir,
                        const std::vector<std::optional<CostColumns>>* costs) {
  std::vector<std::string> cols = {"seed",          "status",         "diverged",     "final_train_loss",
                                   "final_val_acc", "final_test_acc", "best_val_acc", "best_test_acc",
                                   "wall_s",        "steps",          "run_dir"};
  if (costs) cols.insert(cols.end(), cost_column_names().begin(), cost_column_names().end());
  std::string out = header(spec, {"point"}, cols);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!records[i]) continue;
    const RunRecord& r = *records[i];
    const SweepPoint& p = points[runs[i].point];
    std::vector<std::string> row = {p.id};
    row.insert(row.end(), p.values.begin(), p.values.end());
    row.insert(row.end(), {fmt::format("{}", runs[i].seed), r.status, r.status == "diverged" ? "yes" : "no",
                           r.final_train_loss ? number(*r.final_train_loss, "{:.6g}") : std::string(),
                           percent(r.final_val_acc), percent(r.final_test_acc), percent(r.best_val_acc),
                           percent(r.best_test_acc), r.wall_s ? number(*r.wall_s, "{:.2f}") : std::string(),
                           r.steps ? std::to_string(*r.steps) : std::string(),
                           (fs::path(runs_dir) / runs[i].id).string()});
    if (costs) {
      const std::vector<std::string> c = cost_column_values((*costs)[runs[i].point]);
      row.insert(row.end(), c.begin(), c.end());
    }
    out += csv_row(row);
  }
  return out;
}

std::string aggregate_csv(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                          const std::vector<SweepRun>& runs,
                          const std::vector<std::optional<RunRecord>>& records,
                          const std::vector<std::optional<CostColumns>>* costs) {
  const std::vector<std::string> metrics = {"final_val_acc", "final_test_acc", "best_val_acc",
                                            "best_test_acc", "wall_s"};
  std::vector<std::string> cols = {"runs"};
  for (const std::string& m : metrics)
    for (const char* stat : {"mean", "std", "min", "max"}) cols.push_back(std::string(stat) + "_" + m);
  cols.push_back("diverged_runs");
  cols.push_back("failed_runs");
  if (costs) cols.insert(cols.end(), cost_column_names().begin(), cost_column_names().end());
  std::string out = header(spec, {}, cols);
  for (size_t p = 0; p < points.size(); ++p) {
    int finished = 0, diverged = 0, failed = 0;
    std::vector<std::vector<double>> values(metrics.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].point != p || !records[i]) continue;
      const RunRecord& r = *records[i];
      ++finished;
      diverged += r.status == "diverged";
      failed += r.status == "failed";
      for (size_t m = 0; m < metrics.size(); ++m) {
        std::optional<double> v = metrics[m] == "wall_s" ? r.wall_s : metric_value(r, metrics[m]);
        if (v) values[m].push_back(*v);
      }
    }
    if (finished == 0) continue;
    std::vector<std::string> row = points[p].values;
    row.push_back(std::to_string(finished));
    for (size_t m = 0; m < metrics.size(); ++m) {
      const std::vector<double>& v = values[m];
      if (v.empty()) {
        row.insert(row.end(), 4, std::string());
        continue;
      }
      double mean = 0, lo = v[0], hi = v[0];
      for (double x : v) {
        mean += x;
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
      mean /= static_cast<double>(v.size());
      std::string sd;
      if (v.size() >= 2) {
        double ss = 0;
        for (double x : v) ss += (x - mean) * (x - mean);
        sd = fmt::format("{:.3f}", std::sqrt(ss / static_cast<double>(v.size() - 1)));
      }
      row.insert(row.end(),
                 {fmt::format("{:.3f}", mean), sd, fmt::format("{:.2f}", lo), fmt::format("{:.2f}", hi)});
    }
    row.insert(row.end(), {std::to_string(diverged), std::to_string(failed)});
    if (costs) {
      const std::vector<std::string> c = cost_column_values((*costs)[p]);
      row.insert(row.end(), c.begin(), c.end());
    }
    out += csv_row(row);
  }
  return out;
}

}  // namespace emu::train
