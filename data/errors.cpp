#include "data/errors.h"

#include <stdexcept>

namespace emu::data {

void file_error(const std::string& file, const std::string& problem, const std::string& url) {
  std::string msg = file + ": " + problem;
  if (!url.empty()) msg += " (" + url + ")";
  throw std::runtime_error(msg);
}

}  // namespace emu::data
