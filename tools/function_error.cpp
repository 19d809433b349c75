// `emutrain function-error`: max ulp error of the binary32 functions of
// numerics/functions.h over every input (or every N-th encoding), measured
// against binary64 libm. glibc's binary64 exp/log/tanh/erf/erfc are within a
// few binary64 ulps, so the estimate is within about 2^-27 binary32 ulp of the
// truth; tests/test_functions.cpp measures against MPFR (docs/functions.md).
//
//   emutrain function-error [--fn exp,log,...] [--stride N] [--threads T]
//
// The error is |y - f(x)| / ulp(f(x)) with ulp of binary32 at the exact value
// (e clamped at -126). NaN results must be the canonical 0x7fc00000; Inf and
// zero results must match in sign. libm values are a measuring stick only:
// none reaches an emulated value.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "numerics/functions.h"
#include "tools/commands.h"

namespace emu::cli {

// To be declared in tools/commands.h next to the other subcommands.
Runner add_function_error_command(CLI::App& app);

namespace {

struct Function {
  const char* name;
  float (*f)(float);
  double (*reference)(double);
};

double ref_exp(double x) { return std::exp(x); }
double ref_log(double x) { return std::log(x); }
double ref_tanh(double x) { return std::tanh(x); }
double ref_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double ref_erf(double x) { return std::erf(x); }
double ref_gelu(double x) { return x == -INFINITY ? -0.0 : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double ref_silu(double x) { return x == -INFINITY ? -0.0 : x / (1.0 + std::exp(-x)); }
double ref_rsqrt(double x) { return x == 0 && std::signbit(x) ? -INFINITY : 1.0 / std::sqrt(x); }
double ref_reciprocal(double x) { return 1.0 / x; }
double ref_sqrt(double x) { return std::sqrt(x); }

const Function kFunctions[] = {
    {"exp", fn_exp, ref_exp},
    {"log", fn_log, ref_log},
    {"tanh", fn_tanh, ref_tanh},
    {"sigmoid", fn_sigmoid, ref_sigmoid},
    {"erf", fn_erf, ref_erf},
    {"gelu", fn_gelu, ref_gelu},
    {"silu", fn_silu, ref_silu},
    {"rsqrt", fn_rsqrt, ref_rsqrt},
    {"reciprocal", fn_reciprocal, ref_reciprocal},
    {"sqrt", fn_sqrt, ref_sqrt},
};

constexpr double kOverflow = 0x1.ffffffp+127;  // FLT_MAX + half an ulp: rounds to Inf

// Error of y in binary32 ulps of r; +Inf for a wrong special (NaN bits, an Inf
// where the value is finite or the reverse, the sign of a zero).
double ulp_error(float y, double r) {
  uint32_t yb = float_bits(y);
  bool y_nan = (yb & 0x7fffffffu) > 0x7f800000u;
  bool y_inf = (yb & 0x7fffffffu) == 0x7f800000u;
  if (std::isnan(r)) return yb == 0x7fc00000u ? 0.0 : INFINITY;
  if (y_nan) return INFINITY;
  if (std::fabs(r) >= kOverflow) return y_inf && std::signbit(y) == std::signbit(r) ? 0.0 : INFINITY;
  if (y_inf) return INFINITY;
  if (y == 0.0f && std::signbit(y) != std::signbit(r)) return INFINITY;
  if (r == 0.0) return y == 0.0f ? 0.0 : INFINITY;
  int e = std::max(std::ilogb(r), -126);
  return std::fabs(static_cast<double>(y) - r) / std::ldexp(1.0, e - 23);
}

struct Stats {
  double max_err = 0;
  uint32_t worst = 0;  // input bits
  uint64_t n = 0, nearest = 0, wrong_specials = 0;
};

Stats measure_slice(const Function& fn, uint64_t first, uint64_t step) {
  Stats s;
  for (uint64_t u = first; u <= 0xffffffffull; u += step) {
    float x = bits_float(static_cast<uint32_t>(u));
    double err = ulp_error(fn.f(x), fn.reference(x));
    ++s.n;
    if (err < 0.5) ++s.nearest;
    if (std::isinf(err)) {
      ++s.wrong_specials;
      continue;
    }
    if (err > s.max_err) {
      s.max_err = err;
      s.worst = static_cast<uint32_t>(u);
    }
  }
  return s;
}

int run(const std::vector<std::string>& names, uint64_t stride, int threads) {
  int status = 0;
  for (const Function& fn : kFunctions) {
    if (!names.empty() && std::find(names.begin(), names.end(), fn.name) == names.end()) continue;
    std::vector<Stats> parts(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { parts[t] = measure_slice(fn, t * stride, stride * threads); });
    for (auto& th : pool) th.join();
    Stats all;
    for (const Stats& p : parts) {
      all.n += p.n;
      all.nearest += p.nearest;
      all.wrong_specials += p.wrong_specials;
      if (p.max_err > all.max_err) {
        all.max_err = p.max_err;
        all.worst = p.worst;
      }
    }
    float x = bits_float(all.worst);
    fmt::print(
        "{:<10} {} inputs: max {:.4f} ulp at x = {} ({:a}) -> {:a}; {:.4f}% nearest; {} wrong specials\n",
        fn.name, all.n, all.max_err, x, x, fn.f(x), 100.0 * all.nearest / all.n, all.wrong_specials);
    if (all.wrong_specials) status = 1;
  }
  return status;
}

}  // namespace

Runner add_function_error_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "function-error",
      "Max ulp error of the exact-mode functions (numerics/functions.h) against binary64 libm");
  auto names = std::make_shared<std::vector<std::string>>();
  auto stride = std::make_shared<uint64_t>(1);
  auto threads = std::make_shared<int>(1);
  cmd->add_option("--fn", *names, "Functions (default: all)")
      ->delimiter(',')
      ->check(CLI::IsMember(
          {"exp", "log", "tanh", "sigmoid", "erf", "gelu", "silu", "rsqrt", "reciprocal", "sqrt"}));
  cmd->add_option("--stride", *stride, "Measure every N-th encoding (1: all 2^32)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", *threads, "Threads (the machines are shared)")->check(CLI::Range(1, 256));
  return [names, stride, threads]() -> int { return run(*names, *stride, *threads); };
}

EMU_COMMAND("function-error", add_function_error_command);

}  // namespace emu::cli
