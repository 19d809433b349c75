// `emutrain compare-emulation`: the table of relative errors of layer-level
// and op-level emulation against float64 (computed by analysis/compare_emulation.h),
// and with --out a CSV file and a bar chart (SVG and PNG) of it (docs/plots.md).
//
//   emutrain compare-emulation --op matmul --size 64,64,256 --range -1,1 --format bf16,fp16 [--acc fp32]
//                              [--seed 1] [--trials 3] [--out DIR]
#include "analysis/compare_emulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "numerics/format_spec.h"
#include "numerics/round.h"
#include "numerics/split_mul_spec.h"
#include "plot/plot.h"
#include "tools/commands.h"
#include "train/atomic_file.h"
#include "train/csv.h"

namespace emu::cli {
namespace {

using analysis::compare_conv3x3;
using analysis::compare_matmul;
using analysis::CompareOutputs;
using analysis::error_stats;
using analysis::ErrorStats;
using analysis::host_fp16_note;
using analysis::relative_errors;
using analysis::uniform_inputs;

struct CompareOptions {
  std::string op = "matmul";  // matmul | conv3x3
  std::vector<int64_t> size;  // matmul: M,N,K; conv3x3: N,C,H,W,O (stride 1, padding 1)
  double lo = -1, hi = 1;     // inputs uniform in [lo, hi)
  std::vector<std::string> formats{"bf16"};
  std::string acc = "fp32";  // op-level accumulator
  uint64_t seed = 1;
  int trials = 1;
  std::string out_dir;  // "": no files; else <op>.csv, .svg and .png there
};

void round_all(const Format& fmt, std::vector<float>& v) {
  for (float& x : v) x = round_value(fmt, x);
}

std::string fmt_err(double v) { return fmt::format("{:.6e}", v); }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

// Prints the table (and writes the files under out_dir); returns the exit code.
int run_compare_emulation(const CompareOptions& o, std::ostream& out) {
  const bool conv = o.op == "conv3x3";
  if (o.op != "matmul" && !conv)
    throw std::invalid_argument("compare-emulation: --op must be matmul or conv3x3, got '" + o.op + "'");
  const size_t want = conv ? 5 : 3;
  if (o.size.size() != want)
    throw std::invalid_argument(std::string("compare-emulation: --size wants ") +
                                (conv ? "N,C,H,W,O (5 numbers)" : "M,N,K (3 numbers)"));
  for (int64_t s : o.size)
    if (s <= 0 || s > (int64_t{1} << 20))
      throw std::invalid_argument("compare-emulation: --size entries must be in 1..2^20");
  if (!(o.hi > o.lo)) throw std::invalid_argument("compare-emulation: --range wants LO,HI with LO < HI");
  if (o.trials < 1) throw std::invalid_argument("compare-emulation: --trials must be at least 1");
  const Format acc = parse_format(o.acc);

  const int64_t n1 = conv ? o.size[0] * o.size[1] * o.size[2] * o.size[3] : o.size[0] * o.size[2];
  const int64_t n2 = conv ? o.size[4] * o.size[1] * 9 : o.size[2] * o.size[1];
  const int64_t outputs = conv ? o.size[0] * o.size[4] * o.size[2] * o.size[3] : o.size[0] * o.size[1];
  if (conv)
    out << fmt::format(
        "emutrain compare-emulation: conv3x3 x ({},{},{},{}) * w ({},{},3,3), stride 1, padding 1", o.size[0],
        o.size[1], o.size[2], o.size[3], o.size[4], o.size[1]);
  else
    out << fmt::format("emutrain compare-emulation: matmul M={} N={} K={}", o.size[0], o.size[1], o.size[2]);
  out << fmt::format(", inputs uniform in [{}, {}) (Philox seed {}), {} trial(s), {} outputs each\n", o.lo,
                     o.hi, o.seed, o.trials, outputs);
  out << "reference: float64 sums of the exact products of the format-rounded inputs; relative error |y - "
         "ref| / "
         "|ref| over outputs with ref != 0\n";
  out << host_fp16_note() << "; bf16: no native bf16 arithmetic type in this compiler\n\n";
  out << fmt::format("{:<10} {:<34} {:>14} {:>14} {:>14} {:>9}\n", "format", "method", "max rel err",
                     "mean rel err", "median rel err", "exact");

  struct Row {
    std::string format, method;
    ErrorStats s;
  };
  std::vector<Row> rows;
  for (const std::string& name : o.formats) {
    // split:<scheme> (docs/split_mul.md): binary32 inputs, the scheme's products, fp32 output.
    const bool split = is_split_mul_spec(name);
    if (split && conv) throw std::invalid_argument("compare-emulation: split multipliers take --op matmul");
    const SplitMul scheme = split ? parse_split_mul(name) : SplitMul::None;
    const Format fmt = parse_format(split ? "fp32" : name);
    std::vector<double> e_layer, e_op, e_native;
    int64_t x_layer = 0, x_op = 0, x_native = 0, zeros = 0;
    bool native_equal = true, have_native = false;
    for (int t = 0; t < o.trials; ++t) {
      std::vector<float> a = uniform_inputs(o.seed, 2 * static_cast<uint64_t>(t), n1, o.lo, o.hi);
      std::vector<float> b = uniform_inputs(o.seed, 2 * static_cast<uint64_t>(t) + 1, n2, o.lo, o.hi);
      round_all(fmt, a);
      round_all(fmt, b);
      const CompareOutputs r =
          conv ? compare_conv3x3(fmt, acc, a, b, o.size[0], o.size[1], o.size[2], o.size[3], o.size[4])
               : compare_matmul(fmt, acc, a, b, o.size[0], o.size[1], o.size[2], scheme);
      auto append = [](std::vector<double>& dst, std::vector<double> src) {
        dst.insert(dst.end(), src.begin(), src.end());
      };
      append(e_layer, relative_errors(r.reference, r.layer, &x_layer, &zeros));
      append(e_op, relative_errors(r.reference, r.op, &x_op));
      if (!r.native.empty()) {
        have_native = true;
        append(e_native, relative_errors(r.reference, r.native, &x_native));
        for (size_t i = 0; i < r.op.size(); ++i)
          if (std::memcmp(&r.op[i], &r.native[i], sizeof(float)) != 0) native_equal = false;
      }
    }
    auto add_row = [&](std::string method, std::vector<double> errs, int64_t exact) {
      ErrorStats s = error_stats(std::move(errs));
      s.exact = exact;
      s.zero_ref = zeros;
      out << fmt::format("{:<10} {:<34} {:>14} {:>14} {:>14} {:>9}\n", name, method, fmt_err(s.max),
                         fmt_err(s.mean), fmt_err(s.median), exact);
      rows.push_back({name, method, s});
    };
    add_row("layer-level (fp32 compute)", std::move(e_layer), x_layer);
    add_row(fmt::format("op-level (mul {}, acc {})", name, o.acc), std::move(e_op), x_op);
    if (have_native) {
      add_row(fmt::format("host _Float16 (acc {})", o.acc), std::move(e_native), x_native);
      out << fmt::format("{:<10} host _Float16 outputs equal op-level bit for bit: {}\n", "",
                         native_equal ? "yes" : "NO");
    }
    if (zeros > 0)
      out << fmt::format("{:<10} ({} outputs with ref == 0 left out of the relative errors)\n", "", zeros);
  }

  if (!o.out_dir.empty()) {
    std::filesystem::create_directories(o.out_dir);
    const std::string base = (std::filesystem::path(o.out_dir) / ("compare_emulation_" + o.op)).string();
    // Format names and methods are free text (a method names its accumulator
    // format): every field goes through the escaping writer.
    std::string csv = train::csv_row(
        {"format", "method", "max_rel_err", "mean_rel_err", "median_rel_err", "exact", "outputs"});
    for (const Row& r : rows)
      csv += train::csv_row({r.format, r.method, fmt::format("{:.9e}", r.s.max),
                             fmt::format("{:.9e}", r.s.mean), fmt::format("{:.9e}", r.s.median),
                             std::to_string(r.s.exact), std::to_string(r.s.count + r.s.zero_ref)});
    train::write_file_atomic(base + ".csv", csv);
    // One bar per method and format: the median relative error (the mean and
    // the maximum are dominated by outputs whose reference nearly cancels).
    plot::BarChart chart;
    chart.title = fmt::format(
        "{} {}: median relative error vs float64", o.op,
        conv ? fmt::format("{}x{}x{}x{} O={}", o.size[0], o.size[1], o.size[2], o.size[3], o.size[4])
             : fmt::format("{}x{}x{}", o.size[0], o.size[1], o.size[2]));
    chart.x_label = "format";
    chart.y_label = "median relative error";
    chart.log_y = true;
    chart.categories = o.formats;
    for (const char* m : {"layer-level", "op-level", "host _Float16"}) {
      std::vector<double> v(o.formats.size(), std::nan(""));
      bool any = false;
      for (const Row& r : rows)
        if (r.method.rfind(m, 0) == 0) {
          const size_t c = static_cast<size_t>(std::find(o.formats.begin(), o.formats.end(), r.format) -
                                               o.formats.begin());
          v[c] = r.s.median, any = true;
        }
      if (!any) continue;
      chart.group_labels.push_back(std::string(m) +
                                   (std::string(m) == "op-level" ? " (acc " + o.acc + ")" : ""));
      chart.values.push_back(v);
    }
    plot::save(chart, base + ".svg");
    plot::save(chart, base + ".png");
    out << "\nwrote " << base << ".csv, .svg, .png\n";
  }
  return 0;
}

Runner add_compare_emulation(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "compare-emulation",
      "Relative error of layer-level (fp32 compute, output rounded) and op-level emulation vs float64");
  auto o = std::make_shared<CompareOptions>();
  auto size = std::make_shared<std::string>();
  auto range = std::make_shared<std::string>("-1,1");
  auto formats = std::make_shared<std::string>("bf16");
  cmd->add_option("--op", o->op, "matmul or conv3x3 (default matmul)");
  cmd->add_option("--size", *size, "M,N,K (matmul) or N,C,H,W,O (conv3x3)")->required();
  cmd->add_option("--range", *range, "LO,HI: inputs uniform in [LO, HI) (default -1,1)");
  cmd->add_option(
      "--format", *formats,
      "Format, or a comma-separated list (default bf16); matmul also takes split:fp32b|fp32f|fp32t|int16");
  cmd->add_option("--acc", o->acc, "Op-level accumulator format (default fp32)");
  cmd->add_option("--seed", o->seed, "Philox seed of the inputs (default 1)");
  cmd->add_option("--trials", o->trials, "Independent input draws (default 1)");
  cmd->add_option("--out", o->out_dir, "Directory for the CSV table and the bar chart (SVG and PNG)");
  return [o, size, range, formats]() {
    o->size.clear();
    const std::vector<std::string> r = split(*range, ',');
    try {
      for (const std::string& s : split(*size, ',')) o->size.push_back(std::stoll(s));
      if (r.size() != 2) throw std::invalid_argument("");
      o->lo = std::stod(r[0]), o->hi = std::stod(r[1]);
    } catch (const std::exception&) {
      throw std::invalid_argument(
          "compare-emulation: --size wants integers (M,N,K or N,C,H,W,O) and --range "
          "LO,HI (write --range=-1,1 when LO is negative), got --size " +
          *size + " --range " + *range);
    }
    o->formats = split(*formats, ',');
    if (o->formats.empty()) throw std::invalid_argument("compare-emulation: --format is empty");
    return run_compare_emulation(*o, std::cout);
  };
}

EMU_COMMAND("compare-emulation", add_compare_emulation);

}  // namespace
}  // namespace emu::cli
