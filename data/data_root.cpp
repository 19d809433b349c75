#include "data/data_root.h"

#include <cstdlib>

namespace emu::data {
namespace {

const char* env_root() {
  const char* env = std::getenv("EMUTRAIN_DATA_ROOT");
  return env != nullptr && *env != '\0' ? env : nullptr;
}

}  // namespace

std::string data_root() { return env_root() ? env_root() : "data"; }

std::string data_root_origin() {
  return env_root() ? "EMUTRAIN_DATA_ROOT" : "the default; EMUTRAIN_DATA_ROOT is not set";
}

}  // namespace emu::data
