// Building and parsing piecewise-linear approximations (numerics/pwl.h): the
// host computes the breakpoints, values, slopes and intercepts once; kernels
// only read them.
#include "numerics/pwl.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace emu {

const char* pwl_function_name(PwlFunction f) {
  switch (f) {
    case PwlFunction::Exp:
      return "exp";
    case PwlFunction::Tanh:
      return "tanh";
    case PwlFunction::Sigmoid:
      return "sigmoid";
    case PwlFunction::Gelu:
      return "gelu";
    case PwlFunction::Silu:
      return "silu";
  }
  return "?";
}

// Intervals where each function does its work (saturation beyond is within
// about 1e-2 of the side rule for pwl:<K>; docs/functions.md lists the gaps).
PwlDomain pwl_domain(PwlFunction f) {
  switch (f) {
    case PwlFunction::Exp:
      return {-8.0f, 0.0f, PwlSide::Constant, PwlSide::Extend, 0.0f, 0.0f};
    case PwlFunction::Tanh:
      return {-3.0f, 3.0f, PwlSide::Constant, PwlSide::Constant, -1.0f, 1.0f};
    case PwlFunction::Sigmoid:
      return {-6.0f, 6.0f, PwlSide::Constant, PwlSide::Constant, 0.0f, 1.0f};
    case PwlFunction::Gelu:
      return {-4.0f, 4.0f, PwlSide::Constant, PwlSide::Identity, 0.0f, 0.0f};
    case PwlFunction::Silu:
      return {-8.0f, 8.0f, PwlSide::Constant, PwlSide::Identity, 0.0f, 0.0f};
  }
  return {};
}

FunctionApprox make_pwl(PwlFunction f, const std::vector<float>& breaks) {
  const int n = static_cast<int>(breaks.size());
  if (n < 2 || n > kPwlMaxPieces + 1)
    throw std::invalid_argument(fmt::format("needs 2 to {} breakpoints (1 to {} pieces), got {}",
                                            kPwlMaxPieces + 1, kPwlMaxPieces, n));
  for (int k = 0; k < n; ++k) {
    if (!(breaks[k] - breaks[k] == 0.0f))
      throw std::invalid_argument(fmt::format("breakpoint '{}' is not finite", breaks[k]));
    if (k > 0 && !(breaks[k] > breaks[k - 1]))
      throw std::invalid_argument(
          fmt::format("breakpoints must increase, but '{}' follows '{}'", breaks[k], breaks[k - 1]));
  }
  const PwlDomain d = pwl_domain(f);
  FunctionApprox fa;
  fa.mode = FunctionMode::Pwl;
  fa.fn = f;
  fa.pieces = n - 1;
  fa.below_side = d.below_side;
  fa.above_side = d.above_side;
  fa.below = d.below;
  fa.above = d.above;
  for (int k = 0; k < n; ++k) {
    fa.breaks[k] = breaks[k];
    fa.values[k] = pwl_exact(f, breaks[k]);
  }
  // Binary64 differences, quotient and product of binary32 values, each result
  // rounded to binary64, then the constant rounded once to binary32.
  for (int k = 0; k + 1 < n; ++k) {
    const double dv = static_cast<double>(fa.values[k + 1]) - static_cast<double>(fa.values[k]);
    const double db = static_cast<double>(fa.breaks[k + 1]) - static_cast<double>(fa.breaks[k]);
    fa.slope[k] = static_cast<float>(dv / db);
    fa.intercept[k] =
        static_cast<float>(static_cast<double>(fa.values[k]) -
                           static_cast<double>(fa.slope[k]) * static_cast<double>(fa.breaks[k]));
  }
  return fa;
}

FunctionApprox make_pwl(PwlFunction f, int pieces) {
  if (pieces < 1 || pieces > kPwlMaxPieces)
    throw std::invalid_argument(fmt::format("pwl:{} needs 1 to {} pieces", pieces, kPwlMaxPieces));
  const PwlDomain d = pwl_domain(f);
  std::vector<float> b(static_cast<size_t>(pieces + 1));
  const double lo = d.lo, hi = d.hi;
  for (int k = 0; k <= pieces; ++k)
    b[static_cast<size_t>(k)] = static_cast<float>(lo + (hi - lo) * k / pieces);
  return make_pwl(f, b);
}

namespace {

bool is_whole_number(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

FunctionApprox parse_function_approx(PwlFunction f, const std::string& value) {
  if (value == "exact") {
    FunctionApprox fa;
    fa.fn = f;
    return fa;
  }
  if (value.rfind("pwl:", 0) != 0)
    throw std::invalid_argument(
        "is not a function mode; allowed: exact, pwl:<K> (pieces), pwl:<b0>,<b1>,... (breakpoints)");
  const std::string rest = value.substr(4);
  if (rest.find(',') == std::string::npos) {
    if (!is_whole_number(rest))
      throw std::invalid_argument(fmt::format(
          "has '{}' after 'pwl:': give a piece count (pwl:3) or two or more breakpoints (pwl:-3,0,3)", rest));
    const long k = rest.size() > 3 ? -1 : std::strtol(rest.c_str(), nullptr, 10);
    if (k < 1 || k > kPwlMaxPieces)
      throw std::invalid_argument(fmt::format("has piece count '{}'; allowed: 1 to {}", rest, kPwlMaxPieces));
    return make_pwl(f, static_cast<int>(k));
  }
  std::vector<float> breaks;
  size_t start = 0;
  while (true) {
    const size_t comma = rest.find(',', start);
    const std::string token =
        rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const char* s = token.c_str();
    char* end = nullptr;
    errno = 0;
    const double v = token.empty() ? 0.0 : std::strtod(s, &end);
    if (token.empty() || end != s + token.size() || errno == ERANGE || !(v - v == 0.0))
      throw std::invalid_argument(
          fmt::format("has breakpoint '{}', which is not a finite decimal number", token));
    const float b = static_cast<float>(v);
    if (!(b - b == 0.0f))
      throw std::invalid_argument(
          fmt::format("has breakpoint '{}', which is beyond the binary32 range", token));
    breaks.push_back(b);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return make_pwl(f, breaks);
}

std::string describe(const FunctionApprox& fa) {
  if (!fa.pwl()) return "exact";
  const FunctionApprox uniform = make_pwl(fa.fn, fa.pieces);
  bool same = true;
  for (int k = 0; k <= fa.pieces; ++k) same = same && uniform.breaks[k] == fa.breaks[k];
  if (same) return fmt::format("pwl:{} [{}, {}]", fa.pieces, fa.breaks[0], fa.breaks[fa.pieces]);
  std::string s = "pwl:";
  for (int k = 0; k <= fa.pieces; ++k) s += fmt::format("{}{}", k ? "," : "", fa.breaks[k]);
  return s;
}

}  // namespace emu
