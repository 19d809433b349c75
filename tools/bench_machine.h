// What every benchmark prints about the machine it ran on: the CPU model and
// the load averages (the machines are shared; a loaded machine slows the
// emulated and the native runs alike, so ratios stay meaningful).
#pragma once

#include <string>

namespace emu::cli {

std::string cpu_model();     // "Intel(R) Xeon(R) ..." from /proc/cpuinfo, or "unknown CPU"
std::string load_average();  // "0.52 0.31 0.20": the 1, 5 and 15-minute load averages, or "unknown"

}  // namespace emu::cli
