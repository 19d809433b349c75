// Split multipliers' per-epoch report (train/split_report.h).
#include "train/split_report.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "core/split_stats.h"
#include "numerics/split_mul_spec.h"
#include "train/csv.h"

namespace emu::train {

std::vector<std::string> report_split_blocks(const std::string& run_dir, int64_t epoch, int64_t step) {
  const std::vector<SplitLayerStats> layers = split_stats_take();
  if (layers.empty()) return {};
  const std::filesystem::path path = std::filesystem::path(run_dir) / "split_blocks.csv";
  const bool fresh = !std::filesystem::exists(path);
  std::ofstream c(path, std::ios::app);
  if (fresh)
    c << csv_row({"epoch", "step", "layer", "mul", "in_range_outputs", "out_of_range_outputs",
                  "in_range_share", "unit_multiplies_per_output"});
  std::vector<std::string> lines;
  for (SplitMul scheme : {SplitMul::Auto, SplitMul::Fp32F}) {
    SplitLayerStats all{"", scheme, {}};
    std::string per_layer;
    for (const SplitLayerStats& s : layers) {
      if (s.scheme != scheme) continue;
      const SplitRangeCounts& n = s.counts;
      c << csv_row({fmt::format("{}", epoch), fmt::format("{}", step), s.layer, split_mul_name(scheme),
                    fmt::format("{}", n.in_outputs), fmt::format("{}", n.out_outputs),
                    fmt::format("{:.6f}", n.in_share()),
                    fmt::format("{:.2f}", s.unit_multiplies_per_output())});
      all.counts += n;
      const double share = scheme == SplitMul::Auto ? n.in_share() : 1.0 - n.in_share();
      per_layer += fmt::format("{}{} {:.1f}%", per_layer.empty() ? "" : ", ", s.layer, 100.0 * share);
    }
    if (per_layer.empty()) continue;
    const SplitRangeCounts& n = all.counts;
    const double terms = static_cast<double>(n.in_terms + n.out_terms);
    const double per_term =
        terms > 0 ? all.unit_multiplies_per_output() * static_cast<double>(n.outputs()) / terms : 0;
    if (scheme == SplitMul::Auto)
      lines.push_back(
          fmt::format("split:auto: {:.2f}% of outputs as fp32f ({}), {:.2f} unit multiplies per term; "
                      "split_blocks.csv",
                      100.0 * n.in_share(), per_layer, per_term));
    else
      lines.push_back(
          fmt::format("split:fp32f: {:.2f}% of outputs had an operand outside [2^-14, 2^15) ({}); "
                      "split_blocks.csv",
                      100.0 * (1.0 - n.in_share()), per_layer));
  }
  return lines;
}

}  // namespace emu::train
