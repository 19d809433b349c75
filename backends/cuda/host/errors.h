// The executor's error type and the wording helpers its messages share
// (kernel name, block coordinates, compressed thread lists).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/host/qualifiers.h"

namespace emu::hostexec {

// A launch the GPU would refuse (bad configuration) or a kernel whose threads
// misuse a barrier or warp collective (divergence, deadlock, exited lanes).
struct LaunchError : std::runtime_error {
  using runtime_error::runtime_error;
};

namespace detail {

inline std::string coords(unsigned x, unsigned y, unsigned z) {
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
}

inline std::string hex(unsigned v) {
  static const char digits[] = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xf];
  return s;
}

// Sorted ids as ranges: "0-15, 17, 20-31".
inline std::string id_ranges(const std::vector<unsigned>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

inline std::string site(const char* file, int line) {
  return std::string(file ? file : "?") + ":" + std::to_string(line);
}

}  // namespace detail
}  // namespace emu::hostexec
