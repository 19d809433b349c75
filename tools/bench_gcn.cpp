// `emutrain bench gcn`: training epochs per second of a 2-layer GCN on a
// synthetic graph of Cora's shapes (2708 nodes, 1433 binary bag-of-words
// features ~1.27% dense, 10556 directed edges, 16 hidden units, 7 classes,
// ReLU, dropout 0.5, Adam, full batch, loss on 140 labelled nodes), in
// pass-through fp32 and under emulated policies, with the ratio of epoch times.
//
//   emutrain bench gcn [--threads T] [--min-time S] [--seed N] [--nodes V] [--features F]
//                      [--density D] [--edges E] [--hidden H] [--classes C]
#include <fmt/format.h>
#include <stdlib.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/autograd.h"
#include "layers/activation.h"
#include "layers/dropout.h"
#include "layers/gcn.h"
#include "layers/loss.h"
#include "numerics/philox.h"
#include "optim/adam.h"
#include "tools/bench_machine.h"
#include "tools/commands.h"

namespace emu::cli {
namespace {

struct BenchGcnOptions {
  int64_t nodes = 2708, features = 1433, edges = 10556, hidden = 16, classes = 7, labelled = 140;
  double density = 0.0127;  // Cora: 49216 stored words / (2708 * 1433)
  int threads = 0;          // 0: all hardware threads
  double min_time = 2.0;    // seconds of timed epochs per policy (at least 5 epochs)
  uint64_t seed = 1;
};

struct Graph {
  std::shared_ptr<const CsrMatrix> adj, x;
  std::vector<int64_t> targets;  // class of the labelled nodes, -100 elsewhere
};

// Philox-drawn graph: `edges / 2` distinct undirected pairs (both directions
// stored, no self-loops), Bernoulli(density) binary features, uniform labels.
Graph synthetic_graph(const BenchGcnOptions& o) {
  Graph g;
  std::set<std::pair<int64_t, int64_t>> pairs;
  const uint64_t v = static_cast<uint64_t>(o.nodes);
  for (uint64_t i = 0; static_cast<int64_t>(pairs.size()) < o.edges / 2; i += 2) {
    const int64_t a = static_cast<int64_t>(philox_draw(o.seed, 1, i) % v);
    const int64_t b = static_cast<int64_t>(philox_draw(o.seed, 1, i + 1) % v);
    if (a != b) pairs.insert({std::min(a, b), std::max(a, b)});
  }
  std::vector<int64_t> r, c;
  for (auto [a, b] : pairs) r.push_back(a), c.push_back(b), r.push_back(b), c.push_back(a);
  g.adj = std::make_shared<const CsrMatrix>(csr_from_coo(o.nodes, o.nodes, r, c, {}, CooDuplicates::Error));
  const uint32_t threshold = static_cast<uint32_t>(o.density * 4294967296.0);
  std::vector<int64_t> fr, fc;
  for (int64_t i = 0; i < o.nodes; ++i)
    for (int64_t f = 0; f < o.features; ++f)
      if (philox_draw(o.seed, 2, static_cast<uint64_t>(i * o.features + f)) < threshold)
        fr.push_back(i), fc.push_back(f);
  g.x = std::make_shared<const CsrMatrix>(csr_from_coo(o.nodes, o.features, fr, fc));
  for (int64_t i = 0; i < o.nodes; ++i)
    g.targets.push_back(i < o.labelled ? static_cast<int64_t>(philox_draw(o.seed, 3, i) % o.classes) : -100);
  return g;
}

class Gcn : public Module {
 public:
  Gcn(int64_t in, int64_t hidden, int64_t classes) {
    GCNConvOptions o;
    o.cached = true;
    conv1 = register_module("conv1", std::make_shared<GCNConv>(in, hidden, o));
    relu = register_module("relu", std::make_shared<ReLU>());
    drop = register_module("dropout", std::make_shared<Dropout>(0.5f));
    conv2 = register_module("conv2", std::make_shared<GCNConv>(hidden, classes, o));
  }
  Tensor forward(std::shared_ptr<const CsrMatrix> x, std::shared_ptr<const CsrMatrix> adj) {
    return conv2->forward(drop->forward(relu->forward(conv1->forward(x, adj))), adj);
  }
  std::shared_ptr<GCNConv> conv1, conv2;
  std::shared_ptr<ReLU> relu;
  std::shared_ptr<Dropout> drop;
};

struct GcnTiming {
  int epochs = 0;
  double seconds = 0, best = 1e300, cpu_seconds = 0;
  float last_loss = 0;
};

GcnTiming time_policy(const BenchGcnOptions& o, const Graph& g, const NumericsPolicy& policy) {
  auto model = std::make_shared<Gcn>(o.features, o.hidden, o.classes);
  model->initialize(o.seed);
  model->apply_numerics(policy);
  auto loss_fn = std::make_shared<CrossEntropyLoss>();
  loss_fn->apply_numerics(policy);
  AdamOptions ao;
  ao.lr = 0.01f;
  ao.weight_decay = 5e-4f;
  Adam opt(model->named_parameters(), ao);
  auto epoch = [&] {
    model->train();
    opt.zero_grad();
    Tensor loss = loss_fn->forward(model->forward(g.x, g.adj), g.targets);
    loss.backward();
    opt.step();
    model->context().step += 1;
    return loss.item();
  };
  epoch();  // warm-up: normalises and caches the adjacency, allocates
  GcnTiming t;
  using clock = std::chrono::steady_clock;
  while (t.epochs < 5 || t.seconds < o.min_time) {
    const auto start = clock::now();
    const std::clock_t cpu_start = std::clock();
    t.last_loss = epoch();
    t.cpu_seconds += static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    const double s = std::chrono::duration<double>(clock::now() - start).count();
    t.seconds += s;
    t.best = std::min(t.best, s);
    t.epochs += 1;
  }
  return t;
}

int run_bench_gcn(const BenchGcnOptions& o, std::ostream& out) {
  if (o.nodes < 2 || o.features < 1 || o.hidden < 1 || o.classes < 1 || o.edges < 0 || o.density <= 0 ||
      o.density >= 1 || o.edges / 2 > o.nodes * (o.nodes - 1) / 2) {
    std::cerr << "bench gcn: sizes out of range\n";
    return 2;
  }
  cpu_backend().set_threads(o.threads);
  const Graph g = synthetic_graph(o);
  out << fmt::format(
      "emutrain bench gcn: 2-layer GCN ({} -> {} -> {}, ReLU, dropout 0.5, Adam lr 0.01), full batch, seed "
      "{}\n"
      "graph: {} nodes, {} directed edges + {} self-loops, {} sparse binary features ({} stored, {:.2f}%), "
      "{} labelled nodes\n"
      "threads: {}, load average: {}\n\n",
      o.features, o.hidden, o.classes, o.seed, o.nodes, g.adj->nnz(), o.nodes, o.features, g.x->nnz(),
      100.0 * static_cast<double>(g.x->nnz()) / static_cast<double>(o.nodes * o.features), o.labelled,
      o.threads > 0 ? std::to_string(o.threads) : "all", load_average());
  struct Row {
    const char* name;
    std::vector<std::pair<const char*, const char*>> settings;
  };
  const std::vector<Row> rows = {
      {"pass-through (fp32)", {}},
      {"format bf16", {{"format", "bf16"}}},
      {"format bf16, mul e6m6, acc fp32", {{"format", "bf16"}, {"mul", "e6m6"}, {"acc", "fp32"}}},
  };
  out << fmt::format("{:<34} {:>7} {:>9} {:>9} {:>9} {:>9} {:>14} {:>10}\n", "policy", "epochs", "mean ms",
                     "best ms", "cpu ms", "epochs/s", "vs pass (wall)", "(cpu)");
  double base = 0, base_cpu = 0;
  for (const Row& row : rows) {
    NumericsPolicy p;
    for (auto [k, v] : row.settings) p.set(k, v);
    const GcnTiming t = time_policy(o, g, p);
    const double mean = t.seconds / t.epochs;
    const double cpu = t.cpu_seconds / t.epochs;
    if (base == 0) base = mean, base_cpu = cpu;
    out << fmt::format("{:<34} {:>7} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.1f} {:>13.2f}x {:>9.2f}x\n", row.name,
                       t.epochs, 1e3 * mean, 1e3 * t.best, 1e3 * cpu, 1.0 / mean, mean / base,
                       cpu / base_cpu);
  }
  out << fmt::format(
      "\nmean ms: mean wall time of an epoch (forward + backward + Adam step) over >= 5 epochs and {} s;\n"
      "cpu ms: process CPU time per epoch, all threads; vs pass-through: mean epoch time / pass-through's,\n"
      "by wall time and by CPU time (the steadier figure on a loaded machine). load average after: {}\n",
      o.min_time, load_average());
  return 0;
}

Runner add_bench_gcn(CLI::App& bench_group) {
  CLI::App* cmd = bench_group.add_subcommand(
      "gcn", "2-layer GCN training epochs/s on a synthetic Cora-shaped graph, pass-through vs emulated");
  auto o = std::make_shared<BenchGcnOptions>();
  cmd->add_option("--threads", o->threads, "CPU backend threads (default: all cores)");
  cmd->add_option("--min-time", o->min_time, "Seconds of timed epochs per policy (default 2)");
  cmd->add_option("--seed", o->seed, "Seed of the graph, features, labels and weights (default 1)");
  cmd->add_option("--nodes", o->nodes, "Nodes (default 2708)");
  cmd->add_option("--features", o->features, "Sparse binary features per node (default 1433)");
  cmd->add_option("--density", o->density, "Fraction of features present (default 0.0127)");
  cmd->add_option("--edges", o->edges, "Directed edges, both directions of each pair (default 10556)");
  cmd->add_option("--hidden", o->hidden, "Hidden units (default 16)");
  cmd->add_option("--classes", o->classes, "Classes (default 7)");
  return [o]() { return run_bench_gcn(*o, std::cout); };
}

EMU_BENCH_COMMAND("gcn", add_bench_gcn);

}  // namespace
}  // namespace emu::cli
