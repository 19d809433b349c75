// `emutrain compare-emulation` (tools/compare_emulation.h): layer-level and
// op-level emulation of one matmul or 3x3 convolution against float64.
//
// Both emulations run through the engine: mac_gemm for the matmul and the CPU
// backend's conv2d_forward for the convolution, with the policies
//   layer-level: mul fp32, acc fp32, out = format   (fp32 compute, output rounded)
//   op-level:    mul = format, acc = --acc, out = format
// on the same format-rounded inputs; the reference sums the exact products of
// those inputs in float64.
#include "tools/compare_emulation.h"

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

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/tensor.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tools/commands.h"
#include "tools/plot.h"

namespace emu::cli {
namespace {

MacPolicy policy(const Format& mul, const Format& acc, const Format& out) {
  MacPolicy p;
  p.mul_exact = false;
  p.mul = mul;
  p.acc = acc;
  p.out = out;
  p.acc_outer = parse_format("fp32");
  return p;
}

void round_all(const Format& fmt, std::vector<float>& v) {
  for (float& x : v) x = round_value(fmt, x);
}

// fp16 with the settings _Float16 has (RNE, subnormals, Inf/NaN).
bool is_ieee_half(const Format& f) {
  return f.family == Family::Ieee && f.exp_bits == 5 && f.man_bits == 10 && f.rounding == Rounding::NearestEven &&
         f.subnormals && !f.saturate && f.specials == Specials::InfNan && !f.accumulator_only;
}

#ifdef __FLT16_MAX__
constexpr bool kHaveFloat16 = true;
using Half = _Float16;
// One product or sum of halves, rounded to half: a native instruction where
// the CPU has AVX512-FP16, else float arithmetic and one rounding (exact for
// products; correctly rounded for sums, as binary32 has 24 >= 2*11 + 2 bits).
inline Half half_mul(Half a, Half b) {
#ifdef __AVX512FP16__
  return a * b;
#else
  return static_cast<Half>(static_cast<float>(a) * static_cast<float>(b));
#endif
}
inline Half half_add(Half a, Half b) {
#ifdef __AVX512FP16__
  return a + b;
#else
  return static_cast<Half>(static_cast<float>(a) + static_cast<float>(b));
#endif
}
#else
constexpr bool kHaveFloat16 = false;
#endif

// Host fp16: terms[o][k] pairs reduced k ascending, products in half, sums in
// half (acc fp16) or binary32 (acc fp32), output rounded to half.
template <class Terms>
std::vector<float> native_half(const Format& fmt, const Format& acc, int64_t outputs, int64_t K, Terms terms) {
  std::vector<float> y;
#ifdef __FLT16_MAX__
  const bool acc_half = is_ieee_half(acc), acc_f32 = is_plain_fp32(acc);
  if (!is_ieee_half(fmt) || !(acc_half || acc_f32)) return y;
  y.resize(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) {
    Half sh = 0;
    float sf = 0;
    for (int64_t k = 0; k < K; ++k) {
      float a, b;
      terms(o, k, a, b);
      const Half p = half_mul(static_cast<Half>(a), static_cast<Half>(b));
      if (acc_half)
        sh = half_add(sh, p);
      else
        sf = sf + static_cast<float>(p);
    }
    y[o] = acc_half ? static_cast<float>(sh) : static_cast<float>(static_cast<Half>(sf));
  }
#else
  (void)fmt, (void)acc, (void)outputs, (void)K, (void)terms;
#endif
  return y;
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

}  // namespace

std::vector<float> uniform_inputs(uint64_t seed, uint64_t stream, int64_t n, double lo, double hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(philox_draw(seed, stream, static_cast<uint64_t>(i)) >> 8) * 0x1p-24;
    v[i] = static_cast<float>(lo + (hi - lo) * u);
  }
  return v;
}

CompareOutputs compare_matmul(const Format& fmt, const Format& acc, const std::vector<float>& A,
                              const std::vector<float>& B, int64_t M, int64_t N, int64_t K) {
  if (static_cast<int64_t>(A.size()) != M * K || static_cast<int64_t>(B.size()) != K * N)
    throw std::invalid_argument("compare-emulation: matmul operand sizes do not match M, N, K");
  CompareOutputs r;
  r.reference.resize(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += static_cast<double>(A[i * K + k]) * static_cast<double>(B[k * N + j]);
      r.reference[i * N + j] = s;
    }
  const Format fp32 = parse_format("fp32");
  r.layer.resize(static_cast<size_t>(M * N));
  r.op.resize(static_cast<size_t>(M * N));
  mac_gemm(policy(fp32, fp32, fmt), A.data(), K, B.data(), N, r.layer.data(), N, M, N, K, nullptr, GemmDraws{}, 0);
  mac_gemm(policy(fmt, acc, fmt), A.data(), K, B.data(), N, r.op.data(), N, M, N, K, nullptr, GemmDraws{}, 0);
  r.native = native_half(fmt, acc, M * N, K, [&](int64_t o, int64_t k, float& a, float& b) {
    a = A[(o / N) * K + k];
    b = B[k * N + o % N];
  });
  return r;
}

CompareOutputs compare_conv3x3(const Format& fmt, const Format& acc, const std::vector<float>& x,
                               const std::vector<float>& w, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O) {
  if (static_cast<int64_t>(x.size()) != N * C * H * W || static_cast<int64_t>(w.size()) != O * C * 9)
    throw std::invalid_argument("compare-emulation: conv3x3 operand sizes do not match N, C, H, W, O");
  const int64_t K = C * 9, outputs = N * O * H * W;
  // Term k = (ci, kh, kw) of output (n, co, oh, ow): padding positions are zero operands.
  auto term = [&](int64_t o, int64_t k, float& a, float& b) {
    const int64_t ow = o % W, oh = o / W % H, co = o / (H * W) % O, n = o / (H * W * O);
    const int64_t ci = k / 9, kh = k / 3 % 3, kw = k % 3;
    const int64_t ih = oh - 1 + kh, iw = ow - 1 + kw;
    a = ih >= 0 && ih < H && iw >= 0 && iw < W ? x[((n * C + ci) * H + ih) * W + iw] : 0.0f;
    b = w[co * K + k];
  };
  CompareOutputs r;
  r.reference.resize(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) {
    double s = 0;
    for (int64_t k = 0; k < K; ++k) {
      float a, b;
      term(o, k, a, b);
      s += static_cast<double>(a) * static_cast<double>(b);
    }
    r.reference[o] = s;
  }
  const Format fp32 = parse_format("fp32");
  Conv2dParams cp;
  cp.pad_h = cp.pad_w = 1;
  const Tensor xt = Tensor::from_vector({N, C, H, W}, x), wt = Tensor::from_vector({O, C, 3, 3}, w);
  Tensor y = Tensor::zeros({N, O, H, W});
  auto run = [&](const MacPolicy& p) {
    cpu_backend().conv2d_forward(p, cp, xt, wt, nullptr, y, DrawKey{});
    return std::vector<float>(y.data(), y.data() + outputs);
  };
  r.layer = run(policy(fp32, fp32, fmt));
  r.op = run(policy(fmt, acc, fmt));
  r.native = native_half(fmt, acc, outputs, K, term);
  return r;
}

std::vector<double> relative_errors(const std::vector<double>& ref, const std::vector<float>& got, int64_t* exact,
                                    int64_t* zero_ref) {
  std::vector<double> e;
  e.reserve(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = got[i];
    if (exact && g == ref[i]) ++*exact;
    if (ref[i] == 0) {
      if (zero_ref) ++*zero_ref;
      continue;
    }
    e.push_back(std::fabs(g - ref[i]) / std::fabs(ref[i]));
  }
  return e;
}

ErrorStats error_stats(std::vector<double> errors) {
  ErrorStats s;
  s.count = static_cast<int64_t>(errors.size());
  if (errors.empty()) return s;
  double sum = 0;
  for (double e : errors) sum += e, s.max = std::max(s.max, e);
  s.mean = sum / static_cast<double>(errors.size());
  const size_t mid = (errors.size() - 1) / 2;
  std::nth_element(errors.begin(), errors.begin() + static_cast<std::ptrdiff_t>(mid), errors.end());
  s.median = errors[mid];
  return s;
}

std::string host_fp16_note() {
  if (!kHaveFloat16) return "fp16: this compiler has no _Float16; no native fp16 column";
#ifdef __AVX512FP16__
  return "fp16: native _Float16 arithmetic (AVX512-FP16 vmulsh/vaddsh, one rounding per operation)";
#else
  return "fp16: _Float16 is computed as binary32 arithmetic then rounded to half (no native fp16 instructions "
         "in this build); one rounding per operation all the same";
#endif
}

int run_compare_emulation(const CompareOptions& o, std::ostream& out) {
  const bool conv = o.op == "conv3x3";
  if (o.op != "matmul" && !conv) throw std::invalid_argument("compare-emulation: --op must be matmul or conv3x3, got '" + o.op + "'");
  const size_t want = conv ? 5 : 3;
  if (o.size.size() != want)
    throw std::invalid_argument(std::string("compare-emulation: --size wants ") +
                                (conv ? "N,C,H,W,O (5 numbers)" : "M,N,K (3 numbers)"));
  for (int64_t s : o.size)
    if (s <= 0 || s > (int64_t{1} << 20)) throw std::invalid_argument("compare-emulation: --size entries must be in 1..2^20");
  if (!(o.hi > o.lo)) throw std::invalid_argument("compare-emulation: --range wants LO,HI with LO < HI");
  if (o.trials < 1) throw std::invalid_argument("compare-emulation: --trials must be at least 1");
  const Format acc = parse_format(o.acc);

  const int64_t n1 = conv ? o.size[0] * o.size[1] * o.size[2] * o.size[3] : o.size[0] * o.size[2];
  const int64_t n2 = conv ? o.size[4] * o.size[1] * 9 : o.size[2] * o.size[1];
  const int64_t outputs = conv ? o.size[0] * o.size[4] * o.size[2] * o.size[3] : o.size[0] * o.size[1];
  if (conv)
    out << fmt::format("emutrain compare-emulation: conv3x3 x ({},{},{},{}) * w ({},{},3,3), stride 1, padding 1",
                       o.size[0], o.size[1], o.size[2], o.size[3], o.size[4], o.size[1]);
  else
    out << fmt::format("emutrain compare-emulation: matmul M={} N={} K={}", o.size[0], o.size[1], o.size[2]);
  out << fmt::format(", inputs uniform in [{}, {}) (Philox seed {}), {} trial(s), {} outputs each\n", o.lo, o.hi,
                     o.seed, o.trials, outputs);
  out << "reference: float64 sums of the exact products of the format-rounded inputs; relative error |y - ref| / "
         "|ref| over outputs with ref != 0\n";
  out << host_fp16_note() << "; bf16: no native bf16 arithmetic type in this compiler\n\n";
  out << fmt::format("{:<10} {:<34} {:>14} {:>14} {:>14} {:>9}\n", "format", "method", "max rel err", "mean rel err",
                     "median rel err", "exact");

  struct Row {
    std::string format, method;
    ErrorStats s;
  };
  std::vector<Row> rows;
  for (const std::string& name : o.formats) {
    const Format fmt = parse_format(name);
    std::vector<double> e_layer, e_op, e_native;
    int64_t x_layer = 0, x_op = 0, x_native = 0, zeros = 0;
    bool native_equal = true, have_native = false;
    for (int t = 0; t < o.trials; ++t) {
      std::vector<float> a = uniform_inputs(o.seed, 2 * static_cast<uint64_t>(t), n1, o.lo, o.hi);
      std::vector<float> b = uniform_inputs(o.seed, 2 * static_cast<uint64_t>(t) + 1, n2, o.lo, o.hi);
      round_all(fmt, a);
      round_all(fmt, b);
      const CompareOutputs r = conv ? compare_conv3x3(fmt, acc, a, b, o.size[0], o.size[1], o.size[2], o.size[3], o.size[4])
                                    : compare_matmul(fmt, acc, a, b, o.size[0], o.size[1], o.size[2]);
      auto append = [](std::vector<double>& dst, std::vector<double> src) { dst.insert(dst.end(), src.begin(), src.end()); };
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
      out << fmt::format("{:<10} {:<34} {:>14} {:>14} {:>14} {:>9}\n", name, method, fmt_err(s.max), fmt_err(s.mean),
                         fmt_err(s.median), exact);
      rows.push_back({name, method, s});
    };
    add_row("layer-level (fp32 compute)", std::move(e_layer), x_layer);
    add_row(fmt::format("op-level (mul {}, acc {})", name, o.acc), std::move(e_op), x_op);
    if (have_native) {
      add_row(fmt::format("host _Float16 (acc {})", o.acc), std::move(e_native), x_native);
      out << fmt::format("{:<10} host _Float16 outputs equal op-level bit for bit: {}\n", "",
                         native_equal ? "yes" : "NO");
    }
    if (zeros > 0) out << fmt::format("{:<10} ({} outputs with ref == 0 left out of the relative errors)\n", "", zeros);
  }

  if (!o.out_dir.empty()) {
    std::filesystem::create_directories(o.out_dir);
    const std::string base = (std::filesystem::path(o.out_dir) / ("compare_emulation_" + o.op)).string();
    std::ofstream csv(base + ".csv", std::ios::trunc);
    csv << "format,method,max_rel_err,mean_rel_err,median_rel_err,exact,outputs\n";
    for (const Row& r : rows)
      csv << fmt::format("{},{},{:.9e},{:.9e},{:.9e},{},{}\n", r.format, r.method, r.s.max, r.s.mean, r.s.median,
                         r.s.exact, r.s.count + r.s.zero_ref);
    csv.close();
    if (!csv) throw std::runtime_error("compare-emulation: cannot write " + base + ".csv");
    // One bar per method and format: the median relative error (the mean and
    // the maximum are dominated by outputs whose reference nearly cancels).
    plot::BarChart chart;
    chart.title = fmt::format("{} {}: median relative error vs float64", o.op,
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
          const size_t c = static_cast<size_t>(std::find(o.formats.begin(), o.formats.end(), r.format) - o.formats.begin());
          v[c] = r.s.median, any = true;
        }
      if (!any) continue;
      chart.group_labels.push_back(std::string(m) + (std::string(m) == "op-level" ? " (acc " + o.acc + ")" : ""));
      chart.values.push_back(v);
    }
    plot::save(chart, base + ".svg");
    plot::save(chart, base + ".png");
    out << "\nwrote " << base << ".csv, .svg, .png\n";
  }
  return 0;
}

namespace {

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
  cmd->add_option("--format", *formats, "Format, or a comma-separated list (default bf16)");
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
      throw std::invalid_argument("compare-emulation: --size wants integers (M,N,K or N,C,H,W,O) and --range "
                                  "LO,HI (write --range=-1,1 when LO is negative), got --size " + *size +
                                  " --range " + *range);
    }
    o->formats = split(*formats, ',');
    if (o->formats.empty()) throw std::invalid_argument("compare-emulation: --format is empty");
    return run_compare_emulation(*o, std::cout);
  };
}

EMU_COMMAND("compare-emulation", add_compare_emulation);

}  // namespace
}  // namespace emu::cli
