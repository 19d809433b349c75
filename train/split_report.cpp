// split:auto's per-epoch report (train/split_report.h).
#include "train/split_report.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "core/split_stats.h"
#include "train/csv.h"

namespace emu::train {

std::vector<std::string> report_split_auto(const std::string& run_dir, int64_t epoch, int64_t step) {
  const auto layers = split_stats_take();
  if (layers.empty()) return {};
  const std::filesystem::path path = std::filesystem::path(run_dir) / "split_auto.csv";
  const bool fresh = !std::filesystem::exists(path);
  std::ofstream c(path, std::ios::app);
  if (fresh)
    c << csv_row({"epoch", "step", "layer", "fp32f_outputs", "fp32b_outputs", "fp32f_share", "fp32b_share",
                  "unit_multiplies_per_output"});
  SplitAutoCounts all;
  std::string per_layer;
  for (const auto& [layer, n] : layers) {
    c << csv_row({fmt::format("{}", epoch), fmt::format("{}", step), layer, fmt::format("{}", n.fp32f_outputs),
                  fmt::format("{}", n.fp32b_outputs), fmt::format("{:.6f}", n.fp32f_share()),
                  fmt::format("{:.6f}", 1.0 - n.fp32f_share()), fmt::format("{:.1f}", n.unit_multiplies_per_output())});
    all.fp32f_outputs += n.fp32f_outputs, all.fp32b_outputs += n.fp32b_outputs;
    all.fp32f_terms += n.fp32f_terms, all.fp32b_terms += n.fp32b_terms;
    per_layer += fmt::format("{}{} {:.1f}%", per_layer.empty() ? "" : ", ", layer, 100.0 * n.fp32f_share());
  }
  const double terms = static_cast<double>(all.fp32f_terms + all.fp32b_terms);
  return {fmt::format("split:auto: {:.2f}% of outputs as fp32f ({}), {:.2f} unit multiplies per term; "
                      "split_auto.csv",
                      100.0 * all.fp32f_share(), per_layer,
                      terms > 0 ? (3.0 * all.fp32f_terms + 6.0 * all.fp32b_terms) / terms : 0.0)};
}

}  // namespace emu::train
