// The per-epoch report of split:auto's choices (docs/split_mul.md): one line
// for the log and rows of <run>/split_auto.csv, from core/split_stats.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace emu::train {

// Takes the counts since the last call (training and evaluation passes of the
// epoch), appends one row per layer to <run_dir>/split_auto.csv and returns the
// log lines (none when no layer uses split:auto).
std::vector<std::string> report_split_auto(const std::string& run_dir, int64_t epoch, int64_t step);

}  // namespace emu::train
