#include "data/errors.h"

#include <stdexcept>

#include "numerics/printable.h"

namespace emu::data {

void file_error(const std::string& file, const std::string& problem, const std::string& url) {
  std::string msg = file + ": " + problem;
  if (!url.empty()) msg += " (" + url + ")";
  throw std::runtime_error(one_line(msg));  // one line whatever the file name or problem echoes
}

}  // namespace emu::data
