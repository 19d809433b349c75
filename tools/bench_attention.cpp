// `emutrain bench attention`: forward + backward throughput of one Transformer
// encoder block (layers/transformer.h) under plain fp32 (pass-through) and
// emulated policies, each next to the pass-through run of the same process.
//
//   emutrain bench attention [--batch 32 --seq 128 --embed 128 --heads 4 --ff 256]
//                            [--policy "format: bf16" --policy "mul: e6m6, acc: fp32" ...]
//                            [--threads T] [--min-time S] [--post-norm]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/autograd.h"
#include "layers/transformer.h"
#include "numerics/parallel_for.h"
#include "tools/bench_machine.h"
#include "tools/commands.h"

namespace emu::cli {
namespace {

struct BenchAttentionOptions {
  int64_t batch = 32, seq = 128, embed = 128, heads = 4, ff = 256;
  std::vector<std::string> policies;
  int threads = 0;        // 0: hardware concurrency
  double min_time = 2.0;  // seconds of timed runs per policy (at least 2 runs)
  bool post_norm = false;
  float dropout = 0.1f;
};

const char* const kDefaultPolicies[] = {"format: bf16", "mul: e6m6, acc: fp32", "format: bf16, acc: fp32"};

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "format: bf16, acc: fp32" (or "format=bf16,acc=fp32") -> a policy; "fp32" alone is the default one.
NumericsPolicy parse_policy(const std::string& text) {
  NumericsPolicy p;
  if (trim(text) == "fp32") return p;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = trim(text.substr(start, end - start));
    const size_t sep = item.find_first_of(":=");
    if (sep == std::string::npos)
      throw std::invalid_argument(fmt::format("bench attention: policy item '{}' is not 'key: value'", item));
    // A format spec may itself hold colons (bf16:sr): split at the first one only.
    p.set(trim(item.substr(0, sep)), trim(item.substr(sep + 1)), "--policy");
    start = end + 1;
  }
  return p;
}

struct AttentionTiming {
  double forward = 0, backward = 0;  // seconds per iteration, best run
  int runs = 0;
};

// One forward + backward of the block per run, after one untimed warm-up.
AttentionTiming measure(TransformerEncoderBlock& block, const Tensor& x, const Tensor& gy, double min_time) {
  using clock = std::chrono::steady_clock;
  AttentionTiming t;
  t.forward = t.backward = 1e300;
  double total = 0;
  for (int run = -1; run < 2 || total < min_time; ++run) {
    block.zero_grad();
    Tensor xi = x.clone();
    xi.set_requires_grad(true);
    const auto t0 = clock::now();
    Tensor y = block.forward(xi);
    const auto t1 = clock::now();
    y.backward(gy);
    const auto t2 = clock::now();
    block.context().step += 1;  // new dropout masks and draws, as in training
    if (run < 0) continue;
    const double f = std::chrono::duration<double>(t1 - t0).count(),
                 b = std::chrono::duration<double>(t2 - t1).count();
    t.forward = std::min(t.forward, f);
    t.backward = std::min(t.backward, b);
    total += f + b;
    ++t.runs;
  }
  return t;
}

int run_bench_attention(const BenchAttentionOptions& o, std::ostream& out) {
  if (o.batch <= 0 || o.seq <= 0 || o.embed <= 0 || o.heads <= 0 || o.ff <= 0 || o.embed % o.heads != 0)
    throw std::invalid_argument("bench attention: sizes must be positive and --heads must divide --embed");
  const int threads = resolve_threads(o.threads);
  cpu_backend().set_threads(threads);
  std::vector<std::string> specs = o.policies;
  if (specs.empty()) specs.assign(std::begin(kDefaultPolicies), std::end(kDefaultPolicies));
  std::vector<std::pair<std::string, NumericsPolicy>> policies = {{"fp32 (pass-through)", NumericsPolicy()}};
  for (const std::string& s : specs) policies.emplace_back(s, parse_policy(s));

  TransformerBlockOptions bo;
  bo.embed_dim = o.embed;
  bo.num_heads = o.heads;
  bo.ff_dim = o.ff;
  bo.dropout = o.dropout;
  bo.norm_first = !o.post_norm;
  TransformerEncoderBlock block(bo);
  block.initialize(1);
  block.train();
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> xv(static_cast<size_t>(o.batch * o.seq * o.embed)), gv(xv.size());
  for (float& v : xv) v = normal(rng);
  for (float& v : gv) v = normal(rng) * 0x1p-10f;
  const Tensor x = Tensor::from_vector({o.batch, o.seq, o.embed}, xv);
  const Tensor gy = Tensor::from_vector({o.batch, o.seq, o.embed}, gv);
  const double tokens = static_cast<double>(o.batch * o.seq);

  out << fmt::format(
      "emutrain bench attention: one {} encoder block, batch {} x seq {} tokens, embed {}, {} heads (head "
      "dim {}), "
      "ff {}, dropout {}, forward + backward\n",
      o.post_norm ? "post-norm" : "pre-norm", o.batch, o.seq, o.embed, o.heads, o.embed / o.heads, o.ff,
      o.dropout);
  out << fmt::format("cpu: {} ({} online), threads: {}, load average: {}\n", cpu_model(),
                     std::thread::hardware_concurrency(), threads, load_average());

  // Each policy is timed between two pass-through windows; "vs adjacent" compares it with their mean,
  // so that both see the same load.
  block.apply_numerics(NumericsPolicy());
  AttentionTiming before = measure(block, x, gy, o.min_time / 2);
  struct Row {
    std::string label;
    AttentionTiming t;
    double base;  // adjacent pass-through seconds per iteration
  };
  std::vector<Row> rows;
  for (const auto& [label, policy] : policies) {
    block.apply_numerics(policy);
    const AttentionTiming t = measure(block, x, gy, o.min_time);
    block.apply_numerics(NumericsPolicy());
    const AttentionTiming after = measure(block, x, gy, o.min_time / 2);
    rows.push_back({label, t, (before.forward + before.backward + after.forward + after.backward) / 2});
    before = after;
  }
  out << fmt::format("\n{:<26} {:>10} {:>10} {:>10} {:>11} {:>5} {:>13}\n", "policy", "fwd ms", "bwd ms",
                     "total ms", "tokens/s", "runs", "vs fp32");
  for (const Row& r : rows) {
    const double total = r.t.forward + r.t.backward;
    out << fmt::format("{:<26} {:>10.1f} {:>10.1f} {:>10.1f} {:>11.0f} {:>5} {:>12.2f}x\n", r.label,
                       r.t.forward * 1e3, r.t.backward * 1e3, total * 1e3, tokens / total, r.t.runs,
                       total / r.base);
  }
  out << fmt::format(
      "best run of each (>= 2 runs and >= {} s per policy); vs fp32: emulated time / pass-through time of "
      "the\n"
      "pass-through windows timed right before and after it (slowdown of emulation).\nload average after: "
      "{}\n",
      o.min_time, load_average());
  return 0;
}

Runner add_bench_attention(CLI::App& bench) {
  auto opts = std::make_shared<BenchAttentionOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "attention",
      "Forward + backward tokens/s of one Transformer encoder block, emulated vs pass-through fp32");
  cmd->add_option("--batch", opts->batch, "Sequences per batch")->capture_default_str();
  cmd->add_option("--seq", opts->seq, "Tokens per sequence")->capture_default_str();
  cmd->add_option("--embed", opts->embed, "Model width E")->capture_default_str();
  cmd->add_option("--heads", opts->heads, "Attention heads (must divide E)")->capture_default_str();
  cmd->add_option("--ff", opts->ff, "Feed-forward width")->capture_default_str();
  cmd->add_option("--dropout", opts->dropout, "Dropout of the block")->capture_default_str();
  cmd->add_option("--policy", opts->policies,
                  "A numerics policy as 'key: value, key: value' (repeatable; default: 'format: bf16', "
                  "'mul: e6m6, acc: fp32', 'format: bf16, acc: fp32'); fp32 pass-through always runs first");
  cmd->add_option("--threads", opts->threads, "CPU backend threads (default: all cores)");
  cmd->add_option("--min-time", opts->min_time, "Seconds of timed runs per policy")->capture_default_str();
  cmd->add_flag("--post-norm", opts->post_norm, "Post-norm block (default: pre-norm)");
  return [opts] { return run_bench_attention(*opts, std::cout); };
}

EMU_BENCH_COMMAND("attention", add_bench_attention);

}  // namespace
}  // namespace emu::cli
