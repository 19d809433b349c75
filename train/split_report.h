// The per-epoch report of split multipliers' ranges (docs/split_mul.md "Blocks
// in and out of range"): one log line per scheme and rows of
// <run>/split_blocks.csv, from core/split_stats.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace emu::train {

// Takes the counts since the last call (training and evaluation passes of the
// epoch), appends one row per layer to <run_dir>/split_blocks.csv and returns
// the log lines (none when no layer uses split:auto or split:fp32f).
std::vector<std::string> report_split_blocks(const std::string& run_dir, int64_t epoch, int64_t step);

}  // namespace emu::train
