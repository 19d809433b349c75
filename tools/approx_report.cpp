// `emutrain approx report`: the error of each function approximation (exact
// binary32 function, pwl:<K>, user breakpoints) against float64 math, over the
// function's domain, with plots of function, approximation and error.
//
//   emutrain approx report [--function tanh,sigmoid] [--mode pwl:3 --mode pwl:-3,-1,0,1,3]
//                          [--format fp32] [--points 100001] [--out DIR]
//
// Domain: the approximation's interval [b_0, b_K] widened by a quarter of its
// width on each side (so the saturation shows), except exp, whose domain ends at
// b_K (softmax's exp only sees x <= 0). Samples: `points` evenly spaced binary64
// points over the domain, each rounded to binary32 and then read into the format
// (duplicates kept). Errors against float64 libm (a measuring stick only; none
// reaches an emulated value): max and mean |approx - f(x)|, and the max relative
// error |approx - f(x)| / |f(x)| over the samples with |f(x)| >= 0.01.
// With --out: DIR/approx_report.csv (one row per function and mode),
// DIR/<fn>_<mode>.csv (2001 of the samples: x, f(x), approx, error) and the plots
// DIR/<fn>_<mode>.svg / .png (function, approximation, error) and
// DIR/<fn>_<mode>_error.svg / .png (the error alone, on its own scale).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/backend_ops_elementwise.h"
#include "numerics/element_arith.h"
#include "numerics/format_spec.h"
#include "numerics/pwl.h"
#include "plot/plot.h"
#include "tools/commands.h"
#include "train/atomic_file.h"
#include "train/csv.h"

namespace emu::cli {
namespace {

struct ApproxReportOptions {
  std::string functions = "exp,tanh,sigmoid,gelu,silu";
  std::vector<std::string> modes = {"exact", "pwl:3", "pwl:8", "pwl:32"};
  std::string format = "fp32";
  int64_t points = 100001;
  std::string out;
};

double reference(PwlFunction f, double x) {
  switch (f) {
    case PwlFunction::Exp:
      return std::exp(x);
    case PwlFunction::Tanh:
      return std::tanh(x);
    case PwlFunction::Sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case PwlFunction::Gelu:
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case PwlFunction::Silu:
      return x / (1.0 + std::exp(-x));
  }
  return x;
}

PwlFunction function_named(const std::string& name) {
  for (PwlFunction f :
       {PwlFunction::Exp, PwlFunction::Tanh, PwlFunction::Sigmoid, PwlFunction::Gelu, PwlFunction::Silu})
    if (name == pwl_function_name(f)) return f;
  throw std::invalid_argument(
      fmt::format("--function: '{}' is not one of exp, tanh, sigmoid, gelu, silu", name));
}

// "pwl:3" -> "pwl3", "pwl:-3,-1,0.5" -> "pwlm3_m1_0p5": a file-name tag.
std::string mode_tag(const std::string& mode) {
  std::string t;
  for (char c : mode) {
    if (c == ':') continue;
    if (c == ',')
      t += '_';
    else if (c == '-')
      t += 'm';
    else if (c == '.')
      t += 'p';
    else
      t += c;
  }
  return t;
}

struct Errors {
  double max_abs = 0, max_abs_at = 0, mean_abs = 0, max_rel = 0;
  int64_t n = 0;
};

int run_approx_report(const ApproxReportOptions& o, std::ostream& out) {
  const Format fmt_ = parse_format(o.format);
  if (o.points < 2) throw std::invalid_argument("--points must be at least 2");
  std::vector<PwlFunction> fns;
  for (size_t s = 0; s <= o.functions.size();) {
    const size_t c = std::min(o.functions.find(',', s), o.functions.size());
    fns.push_back(function_named(o.functions.substr(s, c - s)));
    s = c + 1;
  }
  std::string summary = train::csv_row(
      {"function", "mode", "format", "lo", "hi", "points", "max_abs", "max_abs_at", "mean_abs", "max_rel"});
  if (!o.out.empty()) std::filesystem::create_directories(o.out);
  out << fmt::format("Errors against float64 over {} evenly spaced points of each domain, results in {}\n",
                     o.points, format_name(fmt_));
  out << fmt::format("{:<8} {:<24} {:>18} {:>12} {:>12} {:>12} {:>12}\n", "function", "mode", "domain",
                     "max abs", "at x", "mean abs", "max rel*");
  const ElementArith arith(fmt_, 0, 0);
  for (PwlFunction f : fns) {
    for (const std::string& mode : o.modes) {
      FunctionApprox fa;
      try {
        fa = parse_function_approx(f, mode);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("--mode '{}': {}", mode, e.what()));
      }
      // The domain: the (default or given) interval widened by a quarter each side.
      const FunctionApprox shape = fa.pwl() ? fa : make_pwl(f, 1);
      const double lo0 = shape.breaks[0], hi0 = shape.breaks[shape.pieces], w = hi0 - lo0;
      const double lo = lo0 - w / 4, hi = f == PwlFunction::Exp ? hi0 : hi0 + w / 4;
      Errors e;
      const int64_t keep_every = std::max<int64_t>(1, (o.points - 1) / 2000);
      plot::Series sx, sa, se;
      sx.label = "f(x) (float64)";
      sa.label = mode + " in " + o.format;
      se.label = "error";
      std::string rows = train::csv_row({"x", "exact_float64", "approx", "error"});
      for (int64_t i = 0; i < o.points; ++i) {
        const float x =
            quantize(fmt_, static_cast<float>(lo + (hi - lo) * static_cast<double>(i) / (o.points - 1)));
        const float a = fa.pwl() ? pwl_value(fa, arith, x, 0, 1) : arith.round(pwl_exact(f, x), 0);
        const double r = reference(f, x), err = static_cast<double>(a) - r;
        const double abs_err = std::fabs(err);
        if (abs_err > e.max_abs || e.n == 0) e.max_abs = abs_err, e.max_abs_at = x;
        e.mean_abs += abs_err;
        if (std::fabs(r) >= 0.01) e.max_rel = std::max(e.max_rel, abs_err / std::fabs(r));
        ++e.n;
        if (i % keep_every == 0 || i == o.points - 1) {
          sx.x.push_back(x), sx.y.push_back(r);
          sa.x.push_back(x), sa.y.push_back(a);
          se.x.push_back(x), se.y.push_back(err);
          rows += train::csv_row(
              {fmt::format("{}", x), fmt::format("{}", r), fmt::format("{}", a), fmt::format("{}", err)});
        }
      }
      e.mean_abs /= static_cast<double>(e.n);
      const std::string domain = fmt::format("[{:g}, {:g}]", lo, hi);
      out << fmt::format("{:<8} {:<24} {:>18} {:>12.4e} {:>12.5g} {:>12.4e} {:>12.4e}\n",
                         pwl_function_name(f), mode, domain, e.max_abs, e.max_abs_at, e.mean_abs, e.max_rel);
      if (o.out.empty()) continue;
      summary += train::csv_row({pwl_function_name(f), mode, o.format, fmt::format("{}", lo),
                                 fmt::format("{}", hi), fmt::format("{}", e.n), fmt::format("{}", e.max_abs),
                                 fmt::format("{}", e.max_abs_at), fmt::format("{}", e.mean_abs),
                                 fmt::format("{}", e.max_rel)});
      const std::string stem = o.out + "/" + pwl_function_name(f) + "_" + mode_tag(mode);
      train::write_file_atomic(stem + ".csv", rows);
      plot::LinePlot p, pe;
      p.title = fmt::format("{} {} in {}", pwl_function_name(f), mode, o.format);
      p.x_label = "x";
      p.y_label = "value";
      p.series = {sx, sa, se};
      pe.title = fmt::format("{} {} in {}: error (approx - f)", pwl_function_name(f), mode, o.format);
      pe.x_label = "x";
      pe.y_label = "error";
      pe.series = {se};
      for (const char* ext : {".svg", ".png"}) {
        plot::save(p, stem + ext);
        plot::save(pe, stem + "_error" + ext);
      }
    }
  }
  out << "* relative error over the points with |f(x)| >= 0.01\n";
  if (!o.out.empty()) train::write_file_atomic(o.out + "/approx_report.csv", summary);
  if (!o.out.empty())
    out << fmt::format("wrote {}/approx_report.csv, per-approximation CSVs and plots\n", o.out);
  return 0;
}

Runner add_approx_command(CLI::App& app) {
  CLI::App* approx =
      app.add_subcommand("approx", "Function approximations (piecewise-linear, docs/functions.md)");
  approx->require_subcommand(1);
  CLI::App* cmd = approx->add_subcommand(
      "report", "Max and mean error of each approximation against float64 over its domain, with plots");
  auto opts = std::make_shared<ApproxReportOptions>();
  cmd->add_option("--function", opts->functions,
                  "Functions, comma-separated (default exp,tanh,sigmoid,gelu,silu)");
  cmd->add_option("--mode", opts->modes,
                  "Modes, repeatable: exact, pwl:<K>, pwl:<b0>,<b1>,... (default exact pwl:3 pwl:8 pwl:32)");
  cmd->add_option("--format", opts->format, "Format the results are rounded to (default fp32)");
  cmd->add_option("--points", opts->points, "Evenly spaced samples of each domain (default 100001)");
  cmd->add_option("--out", opts->out, "Directory for approx_report.csv, per-mode CSVs and SVG/PNG plots");
  return [opts]() { return run_approx_report(*opts, std::cout); };
}

EMU_COMMAND("approx", add_approx_command);

}  // namespace
}  // namespace emu::cli
