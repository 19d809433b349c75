#include "numerics/printable.h"

#include <fmt/format.h>

namespace emu {

std::string printable(std::string_view s, size_t max_len) {
  std::string r;
  const size_t n = s.size() < max_len ? s.size() : max_len;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      r.push_back(static_cast<char>(c));
    } else {
      r += fmt::format("\\x{:02x}", c);
    }
  }
  if (s.size() > max_len) r += "...";
  return r;
}

}  // namespace emu

namespace emu {

std::string one_line(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      r += fmt::format("\\x{:02x}", c);
    } else {
      r.push_back(ch);
    }
  }
  return r;
}

}  // namespace emu
