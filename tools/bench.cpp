// `emutrain bench <what>`: throughput measurements, each printed next to a
// baseline measured in the same run, with the CPU, the thread count and the
// machine's load average, because the machines are shared.
//
//   emutrain bench quantize [--n N] [--threads T] [--formats a,b,...] [--repeat R]
//
// A new benchmark is a function `Runner add_bench_<name>(CLI::App& bench)` that
// adds its subcommand and returns its runner, registered in its own file with
// EMU_BENCH_COMMAND("<name>", add_bench_<name>) (tools/commands.h).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "numerics/bulk.h"
#include "numerics/format_spec.h"
#include "tools/bench_gemm.h"
#include "tools/commands.h"

namespace emu::cli {
namespace {

// --- what every benchmark prints ------------------------------------------

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of all this process's threads, or of the calling thread. Against
// wall time x threads it says whether the threads had their cores or waited
// for other processes.
double cpu_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The 1-minute load average (other processes' demand for the cores), or -1.
double load_average_1min() {
  std::ifstream in("/proc/loadavg");
  double one = -1;
  in >> one;
  return in ? one : -1;
}

// "0.52 0.31 0.20": the 1, 5 and 15-minute load averages.
std::string load_averages_text() {
  std::ifstream in("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  in >> one >> five >> fifteen;
  return in ? fmt::format("{:.2f} {:.2f} {:.2f}", one, five, fifteen) : "unknown";
}

// "Intel(R) Xeon(R) Processor (family 6 model 207), 2 logical CPUs, avx512f avx2"
std::string cpu_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name = "unknown CPU", family, model, flags;
  while (std::getline(in, line)) {
    auto value = [&line] {
      size_t colon = line.find(':');
      return colon == std::string::npos ? std::string() : line.substr(std::min(line.size(), colon + 2));
    };
    if (line.rfind("model name", 0) == 0 && name == "unknown CPU")
      name = value();
    else if (line.rfind("cpu family", 0) == 0 && family.empty())
      family = value();
    else if (line.rfind("model\t", 0) == 0 && model.empty())
      model = value();
    else if (line.rfind("flags", 0) == 0 && flags.empty())
      flags = " " + value() + " ";
  }
  std::string simd;
  for (const char* f : {"avx512f", "avx2"})
    if (flags.find(fmt::format(" {} ", f)) != std::string::npos) simd += fmt::format(" {}", f);
  std::string where = family.empty() ? "" : fmt::format(" (family {} model {})", family, model);
  return fmt::format("{}{}, {} logical CPUs,{}", name, where, std::thread::hardware_concurrency(),
                     simd.empty() ? " no AVX" : simd);
}

// "67108864", "64Mi", "256Ki", "1Gi" -> a count.
size_t parse_count(const std::string& text) {
  size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    throw std::invalid_argument(
        fmt::format("bad count '{}': want an integer, optionally with Ki, Mi or Gi", text));
  }
  std::string suffix = text.substr(pos);
  if (suffix == "Ki")
    value <<= 10;
  else if (suffix == "Mi")
    value <<= 20;
  else if (suffix == "Gi")
    value <<= 30;
  else if (!suffix.empty())
    throw std::invalid_argument(
        fmt::format("bad count '{}': unknown suffix '{}' (Ki, Mi, Gi)", text, suffix));
  return static_cast<size_t>(value);
}

std::string byte_size(double bytes) {
  if (bytes >= 1 << 30) return fmt::format("{:.3g} GiB", bytes / (1 << 30));
  if (bytes >= 1 << 20) return fmt::format("{:.3g} MiB", bytes / (1 << 20));
  return fmt::format("{:.3g} KiB", bytes / 1024);
}

// Prints rows as one table, every column as wide as its widest cell; the first
// column left-aligned, the others right-aligned.
void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c == 0)
        line += fmt::format("{:<{}}", row[c], width[c]);
      else
        line += fmt::format("  {:>{}}", row[c], width[c]);
    }
    fmt::print("{}\n", line);
  }
}

// --- bench quantize -------------------------------------------------------

const char* const kDefaultQuantizeFormats[] = {"fp16",    "bf16",     "e4m3",      "fp8_e4m3",
                                               "e5m2:sr", "e6m6:rtz", "posit16_1", "fixed16_8"};

struct QuantizeArgs {
  std::string n = "64Mi";
  unsigned threads = 0;
  std::vector<std::string> formats;
  int repeat = 5;
};

// Values like a trained network's weights and activations: random sign,
// magnitudes spread log-uniformly over 2^-24 .. 2^8, random fraction bits, plus
// a few zeros. Deterministic, so runs compare.
void fill_inputs(std::vector<float>& v) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (float& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t r = static_cast<uint32_t>(state >> 32);
    uint32_t exponent = 127 - 24 + (r >> 8) % 33;
    uint32_t bits = (r & 0x80000000u) | (exponent << 23) | ((r * 2654435761u) & 0x7fffffu);
    if ((r & 0xff) == 0) bits &= 0x80000000u;
    std::memcpy(&x, &bits, sizeof x);
  }
}

int run_bench_quantize(const QuantizeArgs& args) {
  const size_t n = parse_count(args.n);
  if (n == 0) throw std::invalid_argument("--n must be positive");
  if (args.repeat < 1) throw std::invalid_argument("--repeat must be at least 1");
  std::vector<std::string> specs = args.formats;
  if (specs.empty()) specs.assign(std::begin(kDefaultQuantizeFormats), std::end(kDefaultQuantizeFormats));
  std::vector<Format> formats;
  for (const std::string& spec : specs) {
    formats.push_back(parse_format(spec));
    require_storage(formats.back(), "bench quantize");
  }

  std::vector<float> in(n), out(n), copy(n);
  fill_inputs(in);
  std::memset(out.data(), 0, n * sizeof(float));  // touch every page before timing
  std::memset(copy.data(), 0, n * sizeof(float));
  BulkOptions opt;
  opt.threads = args.threads;
  if (args.threads != 0) opt.min_per_thread = 1;  // exactly the threads asked for
  opt.seed = 1;
  unsigned threads = 0;  // the most any format gets; each row says its own
  for (const Format& f : formats) threads = std::max(threads, quantize_array_threads(f, n, opt));
  const double bytes = 2.0 * sizeof(float) * static_cast<double>(n);  // read + write

  fmt::print("bench quantize: {} floats ({} in + {} out), up to {} thread{}, best of {}\n", n,
             byte_size(bytes / 2), byte_size(bytes / 2), threads, threads == 1 ? "" : "s", args.repeat);
  fmt::print("cpu: {}\n", cpu_description());
  fmt::print("load average before: {} (1, 5, 15 min)\n", load_averages_text());
  fmt::print(
      "baseline: memcpy of the same array (one thread, glibc), timed alternately with each format;\n"
      "GB/s counts bytes read + written; cpu = CPU time / (wall time x threads) of the timed\n"
      "quantize runs (below 100%: the threads waited for the cores); load = 1-min load average\n\n");

  std::vector<std::vector<std::string>> rows;
  rows.push_back({"format", "kernel", "threads", "Melem/s", "GB/s", "memcpy GB/s", "ratio", "cpu", "load"});
  for (size_t k = 0; k < formats.size(); ++k) {
    const Format& f = formats[k];
    const unsigned row_threads = quantize_array_threads(f, n, opt);
    double best = 1e300, best_copy = 1e300, wall = 0, copy_cpu = 0;
    quantize_array(f, in.data(), out.data(), std::min<size_t>(n, 1 << 16), opt);  // warm up code paths
    std::this_thread::sleep_for(std::chrono::milliseconds(5));                    // see below
    const double row_cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    for (int r = 0; r < args.repeat; ++r) {
      double t0 = seconds_now(), c0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
      std::memcpy(copy.data(), in.data(), n * sizeof(float));
      double t1 = seconds_now(), c1 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
      quantize_array(f, in.data(), out.data(), n, opt);
      double t2 = seconds_now();
      copy_cpu += c1 - c0;
      wall += t2 - t1;
      best_copy = std::min(best_copy, t1 - t0);
      best = std::min(best, t2 - t1);
    }
    // A joined thread's CPU time reaches the process clock a moment after
    // join() returns; give the last one that moment.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const double cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - row_cpu - copy_cpu;
    const double load = load_average_1min();
    rows.push_back({format_name(f), quantize_array_kernel(f), fmt::format("{}", row_threads),
                    fmt::format("{:.1f}", n / best * 1e-6), fmt::format("{:.2f}", bytes / best * 1e-9),
                    fmt::format("{:.2f}", bytes / best_copy * 1e-9),
                    fmt::format("{:.2f}x memcpy", best_copy / best),
                    fmt::format("{:.0f}%", 100 * cpu / (wall * row_threads)),
                    load < 0 ? "?" : fmt::format("{:.2f}", load)});
  }
  print_table(rows);
  return 0;
}

Runner add_bench_quantize(CLI::App& bench) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* cmd =
      bench.add_subcommand("quantize", "Throughput of quantize_array (numerics/bulk.h) against memcpy");
  cmd->add_option("--n", args->n, "Array length in floats; suffixes Ki, Mi, Gi")->capture_default_str();
  cmd->add_option("--threads", args->threads,
                  "Worker threads, used as given (0 = quantize_array's own choice: all cores for big arrays)")
      ->capture_default_str();
  cmd->add_option("--formats", args->formats,
                  "Comma-separated format specs (default: "
                  "fp16,bf16,e4m3,fp8_e4m3,e5m2:sr,e6m6:rtz,posit16_1,fixed16_8)")
      ->delimiter(',');
  cmd->add_option("--repeat", args->repeat, "Timed runs per format; the best is printed")
      ->capture_default_str();
  return [args] { return run_bench_quantize(*args); };
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Performance measurements against same-run baselines");
  bench->require_subcommand(1);
  return add_registered_commands(*bench, "bench");
}

EMU_COMMAND("bench", add_bench_command);
EMU_BENCH_COMMAND("quantize", add_bench_quantize);

}  // namespace emu::cli
