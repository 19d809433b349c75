// `emutrain bench lstm`: forward + backward of one LSTM layer (layers/lstm.h)
// under plain fp32 (pass-through) and emulated policies, in tokens (sequence
// steps of one sequence) per second and as a ratio to pass-through measured in
// the same run.
//
//   emutrain bench lstm [--n 32 --t 64 --i 128 --h 256] [--threads T] [--min-time S]
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/autograd.h"
#include "layers/lstm.h"
#include "layers/shape_ops.h"
#include "numerics/parallel_for.h"
#include "numerics/philox.h"
#include "tools/bench_machine.h"
#include "tools/commands.h"

namespace emu::cli {
namespace {

struct BenchLstmOptions {
  int64_t n = 32, t = 64, i = 128, h = 256;
  int threads = 0;        // 0: hardware concurrency
  double min_time = 1.0;  // seconds of timed runs per policy (at least 3 runs)
  uint64_t seed = 1;
};

struct LstmTiming {
  double fwd = 1e300, total = 1e300;  // fastest runs, seconds
  double mean = 0;                    // mean forward + backward time
  int runs = 0;
};

// Uniform(-1, 1) inputs from Philox, so runs compare across machines.
Tensor random_input(const Shape& shape, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t k = 0; k < v.size(); ++k)
    v[k] = (static_cast<float>(philox_draw(seed, 7, k) >> 8) * 0x1p-24f) * 2.0f - 1.0f;
  return Tensor::from_vector(shape, v);
}

int run_bench_lstm(const BenchLstmOptions& o, std::ostream& out) {
  if (o.n <= 0 || o.t <= 0 || o.i <= 0 || o.h <= 0)
    throw std::invalid_argument("bench lstm: --n, --t, --i and --h must be positive");
  const int threads = resolve_threads(o.threads);
  cpu_backend().set_threads(threads);
  const double tokens = static_cast<double>(o.n) * o.t;
  // Gate MACs of the forward; backward: the hidden-state, input and weight gradients, 3x.
  const double fwd_macs = tokens * 4 * o.h * (o.i + o.h);

  out << fmt::format(
      "emutrain bench lstm: one layer, N={} T={} I={} H={} (batch first), forward + backward\n", o.n, o.t,
      o.i, o.h);
  out << fmt::format("cpu: {} ({} online), threads: {}, load average: {}\n", cpu_model(),
                     std::thread::hardware_concurrency(), threads, load_average());

  const std::vector<std::pair<const char*, std::vector<std::pair<const char*, const char*>>>> policies = {
      {"fp32 (pass-through)", {}},
      {"format: bf16", {{"format", "bf16"}}},
      {"mul: e6m6, acc: fp32", {{"mul", "e6m6"}, {"acc", "fp32"}}},
  };
  const Tensor x = random_input({o.n, o.t, o.i}, o.seed);
  const Tensor gy = random_input({o.n, o.t, o.h}, o.seed + 1);
  struct Row {
    std::string label;
    LstmTiming t;
  };
  std::vector<Row> rows;
  for (const auto& [label, settings] : policies) {
    auto lstm = std::make_shared<LSTM>(o.i, o.h);
    lstm->initialize(o.seed);
    NumericsPolicy policy;
    for (const auto& [k, v] : settings) policy.set(k, v);
    lstm->apply_numerics(policy);
    Tensor xi = x.clone().set_requires_grad(true);
    using clock = std::chrono::steady_clock;
    auto run = [&](LstmTiming* t) {
      lstm->zero_grad();
      const auto t0 = clock::now();
      RecurrentOutput r = lstm->forward(xi);
      const auto t1 = clock::now();
      r.output.backward(gy);
      const auto t2 = clock::now();
      if (!t) return;
      const double f = std::chrono::duration<double>(t1 - t0).count(),
                   s = std::chrono::duration<double>(t2 - t0).count();
      t->fwd = std::min(t->fwd, f);
      t->total = std::min(t->total, s);
      t->mean += s;
      ++t->runs;
    };
    run(nullptr);  // warm-up
    LstmTiming t;
    while (t.runs < 3 || t.mean < o.min_time) run(&t);
    t.mean /= t.runs;
    rows.push_back({label, t});
  }

  out << fmt::format("\n{:<24} {:>9} {:>9} {:>9} {:>12} {:>8} {:>9}\n", "policy", "fwd ms", "fwd+bwd",
                     "mean ms", "tokens/s", "GMAC/s", "vs fp32");
  const double base = rows.front().t.total;
  for (const Row& r : rows)
    out << fmt::format("{:<24} {:>9.2f} {:>9.2f} {:>9.2f} {:>12.0f} {:>8.2f} {:>8.2f}x\n", r.label,
                       r.t.fwd * 1e3, r.t.total * 1e3, r.t.mean * 1e3, tokens / r.t.total,
                       4 * fwd_macs / r.t.total * 1e-9, r.t.total / base);
  out << fmt::format(
      "tokens/s: N*T / fastest forward+backward; GMAC/s counts the gate MACs, forward and 3x backward "
      "({:.3g} MAC);\n"
      "vs fp32: fastest time / fastest pass-through time (>= 3 runs and >= {} s per policy).\n"
      "load average after: {}\n",
      4 * fwd_macs, o.min_time, load_average());
  return 0;
}

Runner add_bench_lstm(CLI::App& bench_group) {
  CLI::App* cmd = bench_group.add_subcommand(
      "lstm", "LSTM layer forward+backward throughput under fp32 pass-through and emulated policies");
  auto opts = std::make_shared<BenchLstmOptions>();
  cmd->add_option("--n", opts->n, "Batch size (default 32)");
  cmd->add_option("--t", opts->t, "Sequence length (default 64)");
  cmd->add_option("--i", opts->i, "Input features (default 128)");
  cmd->add_option("--h", opts->h, "Hidden size (default 256)");
  cmd->add_option("--threads", opts->threads, "CPU backend threads (default: all cores)");
  cmd->add_option("--min-time", opts->min_time, "Seconds of timed runs per policy (default 1)");
  cmd->add_option("--seed", opts->seed, "Seed of the inputs and weights (default 1)");
  return [opts]() { return run_bench_lstm(*opts, std::cout); };
}

EMU_BENCH_COMMAND("lstm", add_bench_lstm);

}  // namespace
}  // namespace emu::cli
