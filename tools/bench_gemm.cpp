// `emutrain bench gemm`: mac_gemm throughput under common policies, next to
// OpenBLAS SGEMM on the same operands in the same process and run.
//
//   emutrain bench gemm [--m 512 --n 512 --k 512] [--threads T] [--min-time S] [--generic]
//   emutrain bench gemm --device cuda [--m 4096 ...]     (tools/bench_gemm_device.cpp)
#include "tools/bench_gemm.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/gemm.h"
#include "numerics/format_spec.h"
#include "numerics/parallel_for.h"
#include "numerics/round.h"
#include "tools/bench_machine.h"
#include "tools/commands.h"
#include "tools/openblas_core.h"

// OpenBLAS's CBLAS entry points (libopenblas, LP64), declared here so that the
// tool does not depend on where the distribution puts cblas.h.
extern "C" {
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc);
char* openblas_get_corename(void);
char* openblas_get_config(void);
void openblas_set_num_threads(int threads);
}

namespace emu::cli {
namespace {

constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111;

// OpenBLAS's own choice of kernel is its best where it knows the CPU (Zen 3 and
// 4, Skylake-X and its successors in 0.3.21), and OPENBLAS_CORETYPE set by the
// environment may force an older one (docs/gemm.md). So the tool leaves a set
// OPENBLAS_CORETYPE alone (and warns if it forces an older kernel), and only
// where OpenBLAS, left to itself, picked a kernel below the CPU's vector level
// does it re-execute itself with the best core of that level. Returns only if
// that is not needed or not possible.
void ensure_openblas_best_kernel() {
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  const OpenBlasKernel k = judge_openblas_kernel(openblas_get_corename(), nullptr);
  const char* best = openblas_best_core(k.cpu_level);
  if (!k.older || !best) return;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  if (args.empty()) return;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  setenv("OPENBLAS_CORETYPE", best, 1);
  setenv("EMUTRAIN_OPENBLAS_OWN_CORE", k.core.c_str(), 1);  // for the report after the exec
  execv("/proc/self/exe", argv.data());
  unsetenv("OPENBLAS_CORETYPE");  // exec failed: carry on; the report warns
  unsetenv("EMUTRAIN_OPENBLAS_OWN_CORE");
}

struct GemmTiming {
  double best = 0;  // fastest run, seconds
  double mean = 0;  // total time / runs: the throughput sustained under the machine's load
  int runs = 0;
};

// Times `run` after one untimed warm-up: at least 3 runs and min_time seconds.
template <class Run>
GemmTiming measure(double min_time, const Run& run) {
  using clock = std::chrono::steady_clock;
  run();
  GemmTiming t;
  t.best = 1e300;
  double total = 0;
  while (t.runs < 3 || total < min_time) {
    const auto t0 = clock::now();
    run();
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    t.best = std::min(t.best, s);
    total += s;
    if (++t.runs >= 100000) break;
  }
  t.mean = total / t.runs;
  return t;
}

}  // namespace

MacPolicy bench_gemm_policy(const char* mul, const char* acc) {
  MacPolicy p;
  p.mul_exact = std::string(mul) == "exact";
  p.mul = parse_format(p.mul_exact ? "fp32" : mul);
  p.acc = parse_format(acc);
  p.out = parse_format("fp32");
  p.acc_outer = parse_format("fp32");
  return p;
}

int run_bench_gemm(const BenchGemmOptions& opts, std::ostream& out) {
  if (opts.device != "cpu") return run_bench_gemm_device(opts, out);
  ensure_openblas_best_kernel();
  BenchGemmOptions o = opts;
  for (int64_t* d : {&o.m, &o.n, &o.k}) *d = *d ? *d : 512;
  if (o.m <= 0 || o.n <= 0 || o.k <= 0)
    throw std::invalid_argument("bench gemm: --m, --n and --k must be positive");
  const int threads = resolve_threads(o.threads);
  const int64_t M = o.m, N = o.n, K = o.k;
  const double macs = static_cast<double>(M) * N * K;

  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal;
  std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N)),
      C(static_cast<size_t>(M * N));
  for (float& x : A) x = normal(rng);
  for (float& x : B) x = normal(rng);
  // int8 operands: round(32 x) clamped to [-128, 127], as integer-valued binary32.
  std::vector<float> A8(A.size()), B8(B.size());
  auto q8 = [](float x) { return std::min(127.0f, std::max(-128.0f, std::nearbyint(32.0f * x))); };
  std::transform(A.begin(), A.end(), A8.begin(), q8);
  std::transform(B.begin(), B.end(), B8.begin(), q8);
  // e6m6 operands: the N(0,1) values rounded to e6m6, what a GEMM under an e6m6 policy reads in
  // training (weights and activations stored in the format); they take the short paths.
  const Format e6m6 = parse_format("e6m6");
  std::vector<float> A6(A.size()), B6(B.size());
  auto q6 = [&](float x) { return quantize(e6m6, x); };
  std::transform(A.begin(), A.end(), A6.begin(), q6);
  std::transform(B.begin(), B.end(), B6.begin(), q6);

  const char* core_env = std::getenv("OPENBLAS_CORETYPE");
  const char* own_core = std::getenv("EMUTRAIN_OPENBLAS_OWN_CORE");
  const char* l2_env = std::getenv("OPENBLAS_L2_SIZE");
  out << fmt::format("emutrain bench gemm: C = A B, M={} N={} K={} ({:.3g} MAC), operands N(0,1), seed {}\n",
                     M, N, K, macs, o.seed);
  out << fmt::format("cpu: {} ({} online), threads: {}, load average: {}\n", cpu_model(),
                     std::thread::hardware_concurrency(), threads, load_average());
  out << fmt::format("emutrain kernels: {}\n", gemm_kernel_isa());
  const OpenBlasKernel kernel = judge_openblas_kernel(openblas_get_corename(), own_core ? nullptr : core_env);
  out << fmt::format("openblas: {}; kernel {} ({}; CPU: {}), {}\n", openblas_get_config(), kernel.core,
                     vector_level_name(kernel.core_level), vector_level_name(kernel.cpu_level),
                     own_core
                         ? fmt::format("OPENBLAS_CORETYPE={} set by this tool: OpenBLAS chose {} by itself",
                                       core_env, own_core)
                     : core_env ? fmt::format("forced by OPENBLAS_CORETYPE={}", core_env)
                                : std::string("OpenBLAS's own choice"));
  if (!kernel.warning.empty()) out << kernel.warning << "\n";
  if (l2_env)
    out << fmt::format(
        "warning: OPENBLAS_L2_SIZE={} overrides OpenBLAS's cache blocking for this CPU; unset it for this "
        "command\n",
        l2_env);
  openblas_set_num_threads(threads);

  auto blas = [&] {
    cblas_sgemm(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), 1.0f, A.data(), static_cast<int>(K), B.data(), static_cast<int>(N), 0.0f,
                C.data(), static_cast<int>(N));
  };

  enum class Operands { Normal, Int8, E6m6 };
  struct Case {
    const char* label;
    const char* mul;
    const char* acc;
    Operands operands;
    bool generic;
  };
  std::vector<Case> cases = {
      {"fp32 / acc fp32 (pass-through)", "fp32", "fp32", Operands::Normal, false},
      {"mul e6m6 / acc fp32", "e6m6", "fp32", Operands::Normal, false},
      {"mul e6m6 / acc fp32, e6m6 operands (+)", "e6m6", "fp32", Operands::E6m6, false},
      {"bf16 / acc bf16", "bf16", "bf16", Operands::Normal, false},
      {"posit16_1 / acc posit16_1", "posit16_1", "posit16_1", Operands::Normal, false},
      {"int8 / acc int32 (*)", "exact", "int32", Operands::Int8, false},
  };
  if (o.generic) {
    cases.push_back({"mul e6m6 / acc fp32, generic path", "e6m6", "fp32", Operands::Normal, true});
    cases.push_back(
        {"posit16_1 / acc posit16_1, generic path", "posit16_1", "posit16_1", Operands::Normal, true});
  }

  // Two ratios. "vs best": fastest policy run / fastest OpenBLAS run, the
  // conservative one on a shared machine (a 1 ms SGEMM finds quiet moments
  // that a 100 ms run cannot). "vs adjacent": mean policy time / mean OpenBLAS
  // time over windows of the same length right before and after the policy,
  // so that both see the same load.
  const double blas_window = o.min_time / 2;
  GemmTiming before = measure(blas_window, blas);
  double blas_best = before.best;
  struct Row {
    std::string label, path;
    GemmTiming t;
    double blas_mean;
  };
  std::vector<Row> rows;
  for (const Case& c : cases) {
    const MacPolicy p = bench_gemm_policy(c.mul, c.acc);
    const float* a = c.operands == Operands::Int8   ? A8.data()
                     : c.operands == Operands::E6m6 ? A6.data()
                                                    : A.data();
    const float* b = c.operands == Operands::Int8   ? B8.data()
                     : c.operands == Operands::E6m6 ? B6.data()
                                                    : B.data();
    GemmPath path = GemmPath::Generic;
    const GemmTiming t = measure(c.generic ? 0.0 : o.min_time, [&] {
      path = mac_gemm_run(p, a, K, b, N, C.data(), N, M, N, K, nullptr, GemmDraws{}, threads, c.generic);
    });
    const GemmTiming after = measure(blas_window, blas);
    blas_best = std::min(blas_best, after.best);
    rows.push_back({c.label, gemm_path_name(path), t, (before.mean + after.mean) / 2});
    before = after;
  }

  out << fmt::format("\n{:<40} {:<13} {:>9} {:>8} {:>8} {:>10} {:>11}\n", "policy (mul / acc, out fp32)",
                     "path", "best ms", "GMAC/s", "vs best", "mean ms", "vs adjacent");
  out << fmt::format("{:<40} {:<13} {:>9.3f} {:>8.2f} {:>8} {:>10} {:>11}\n", "OpenBLAS cblas_sgemm (fp32)",
                     "-", blas_best * 1e3, macs / blas_best * 1e-9, "1x", "", "");
  for (const Row& r : rows) {
    out << fmt::format("{:<40} {:<13} {:>9.3f} {:>8.2f} {:>7.1f}x {:>10.3f} {:>10.1f}x\n", r.label, r.path,
                       r.t.best * 1e3, macs / r.t.best * 1e-9, r.t.best / blas_best, r.t.mean * 1e3,
                       r.t.mean / r.blas_mean);
  }
  out << "(*) operands quantized to int8 (round(32 x), clamped), exact products, int32 accumulator\n"
         "(+) operands rounded to e6m6 first (as training reads them under an e6m6 policy); the other rows "
         "take the N(0,1) binary32 operands as they are\n";
  out << fmt::format(
      "vs best: fastest run / fastest OpenBLAS run (>= 3 runs and >= {} s per policy). "
      "vs adjacent: mean time / mean OpenBLAS time in windows right before and after.\n"
      "load average after: {}\n",
      o.min_time, load_average());
  return 0;
}

Runner add_bench_gemm(CLI::App& bench_group) {
  CLI::App* cmd = bench_group.add_subcommand(
      "gemm", "mac_gemm GMAC/s under common policies next to OpenBLAS SGEMM (same run, ratios)");
  auto opts = std::make_shared<BenchGemmOptions>();
  cmd->add_option("--m", opts->m, "Rows of A and C (default 512; 4096 on cuda, 128 on cuda-host)");
  cmd->add_option("--n", opts->n, "Columns of B and C (default as --m)");
  cmd->add_option("--k", opts->k, "Reduction length (default as --m)");
  cmd->add_option("--device", opts->device,
                  "cpu (mac_gemm vs OpenBLAS), cuda (the CUDA backend's gemm vs cuBLAS SGEMM, TF32 off) or "
                  "cuda-host")
      ->capture_default_str();
  cmd->add_option("--threads", opts->threads, "Threads for mac_gemm and OpenBLAS (default: all cores)");
  cmd->add_option("--min-time", opts->min_time, "Seconds of timed runs per policy (default 0.5)");
  cmd->add_option("--seed", opts->seed, "Seed of the N(0,1) operands (default 1)");
  cmd->add_flag("--generic", opts->generic, "Also time the generic path (mac_reduce per output; slow)");
  return [opts]() { return run_bench_gemm(*opts, std::cout); };
}

EMU_BENCH_COMMAND("gemm", add_bench_gemm);

}  // namespace emu::cli
