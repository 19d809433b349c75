#include "config/scalar.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "config/recipe_error.h"

namespace emu::config {

std::optional<int64_t> read_int(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<double> read_number(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<float> read_float(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  float v = std::strtof(text.c_str(), &end);  // correctly rounded to binary32
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> read_bool(const std::string& text) {
  static const char* yes[] = {"true", "True", "TRUE", "on", "On", "ON", "yes", "Yes", "YES"};
  static const char* no[] = {"false", "False", "FALSE", "off", "Off", "OFF", "no", "No", "NO"};
  for (const char* y : yes)
    if (text == y) return true;
  for (const char* n : no)
    if (text == n) return false;
  return std::nullopt;
}

int64_t parse_int(const std::string& text, const std::string& path) {
  std::optional<int64_t> v = read_int(text);
  if (!v) throw RecipeError(fmt::format("{}: '{}' is not an integer", path, text));
  return *v;
}

double parse_number(const std::string& text, const std::string& path) {
  std::optional<double> v = read_number(text);
  if (!v) throw RecipeError(fmt::format("{}: '{}' is not a finite number", path, text));
  return *v;
}

bool parse_bool(const std::string& text, const std::string& path) {
  std::optional<bool> v = read_bool(text);
  if (!v) throw RecipeError(fmt::format("{}: '{}' is not true or false", path, text));
  return *v;
}

}  // namespace emu::config
