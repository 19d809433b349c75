// `emutrain comm-check [--comm nccl|mpi|local]`: runs the data-parallel
// communication path of docs/parallel.md once and checks its bits, so the
// communicator code (NCCL above all, which the build machines cannot run) has
// run and is known to hand back what it was given:
//   1. allgather_doubles of special values (-0, NaN payloads, subnormals,
//      infinities) and Philox-drawn doubles, each rank's part computable by
//      every rank: the gathered bytes equal the expected ones (memcmp);
//   2. the all-reduce path of the layers, reduce_over_rows under the Gather
//      mode (each rank's runs, gathered through the communicator, added in rank
//      order), against the same reduction computed in this process under the
//      Emulate mode (core/comm_reduce.h): equal bytes.
// One process is one rank (the GPU machines have one GPU); under mpirun every
// rank runs it and rank 0 reports. Exit 0 when both hold, 1 when not.
#include <fmt/format.h>

#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/comm.h"
#include "core/comm_mpi.h"
#include "core/comm_reduce.h"
#include "core/tensor.h"
#include "numerics/mac.h"
#include "numerics/philox.h"
#include "tools/bench_gemm.h"
#include "tools/commands.h"

#ifdef EMUTRAIN_HAVE_CUDA
#include "backends/cuda/comm_nccl.h"
#endif

namespace emu::cli {
namespace {

struct CommCheckOptions {
  std::string comm = "nccl";
  int64_t rows = 4096;       // terms of each reduction, over all ranks
  int64_t outputs = 257;     // reductions
  std::string mul = "e6m6";  // the reduction's multiplier and accumulator formats
  std::string acc = "fp32";
};

double bits_to_double(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

// Rank r's contribution to the allgather check: the same on every rank that computes it.
std::vector<double> gather_part(int r) {
  std::vector<double> v = {r + 0.25,
                           -0.0,
                           bits_to_double(0x7ff8000000000000ull | (0x1234ull + static_cast<uint64_t>(r))),
                           bits_to_double(0xfff0000000000001ull),  // a signalling NaN's bits
                           std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::infinity(),
                           -1e308};
  for (uint64_t i = 0; i < 1000; ++i)
    v.push_back(
        bits_to_double((static_cast<uint64_t>(philox_draw(7, static_cast<uint64_t>(r), 2 * i)) << 32) |
                       philox_draw(7, static_cast<uint64_t>(r), 2 * i + 1)));
  return v;
}

std::shared_ptr<Communicator> make_world(const std::string& comm, std::string* description) {
  std::shared_ptr<Communicator> boot;
  if (comm == "mpi" || started_by_mpi())
    boot = make_mpi_communicator();
  else
    boot = std::make_shared<LocalCommunicator>();
  if (comm == "nccl") {
#ifdef EMUTRAIN_HAVE_CUDA
    *description = nccl_library_description();
    return make_nccl_communicator(boot);
#else
    throw std::runtime_error("comm-check: --comm nccl needs the CUDA backend, which this build lacks");
#endif
  }
  if (comm != "local" && comm != "mpi")
    throw std::invalid_argument("comm-check: --comm: '" + comm + "' (give nccl, mpi or local)");
  *description = comm == "mpi" ? "MPI" : "one process";
  return boot;
}

int run_comm_check(const CommCheckOptions& o, std::ostream& out) {
  std::string description;
  std::shared_ptr<Communicator> w = make_world(o.comm, &description);
  set_world(w);
  const int ranks = w->size(), rank = w->rank();
  const bool report = rank == 0;
  if (report)
    out << fmt::format("comm-check: {} communicator over {} rank{} ({})\n", w->name(), ranks,
                       ranks == 1 ? "" : "s", description);
  bool ok = true;

  // 1. allgather of special values.
  const std::vector<double> mine = gather_part(rank);
  const std::vector<double> got = w->allgather_doubles(mine);
  std::vector<double> expected;
  for (int r = 0; r < ranks; ++r) {
    const std::vector<double> part = gather_part(r);
    expected.insert(expected.end(), part.begin(), part.end());
  }
  const bool gather_ok = got.size() == expected.size() &&
                         std::memcmp(got.data(), expected.data(), got.size() * sizeof(double)) == 0;
  ok = ok && gather_ok;
  if (report)
    out << fmt::format(
        "  allgather_doubles, {} values per rank (-0, NaN payloads, subnormal, inf, random bits): {}\n",
        mine.size(), gather_ok ? "pass (bit-identical)" : "FAIL");

  // 2. the all-reduce path: reduce_over_rows, every rank holding all rows (full_rows) and
  //    reducing its share; the same reduction emulated in this process.
  if (o.rows <= 0 || o.outputs <= 0 || o.rows % ranks != 0)
    throw std::invalid_argument(
        fmt::format("comm-check: --rows {} must be positive and divide into {} ranks", o.rows, ranks));
  const MacPolicy p = bench_gemm_policy(o.mul.c_str(), o.acc.c_str());
  const int64_t R = o.rows, n = o.outputs;
  std::vector<float> a(static_cast<size_t>(R * n)), b(a.size());  // a[o*R + k]: output o's term k
  for (size_t i = 0; i < a.size(); ++i) {
    // Values of a few magnitudes and both signs, zeros included (skipped terms keep their place).
    const uint32_t u = philox_draw(11, 0, i), v = philox_draw(11, 1, i);
    a[i] = u % 17 == 0 ? 0.0f : static_cast<float>(static_cast<int32_t>(u)) * 0x1p-31f * (1 << (u % 7));
    b[i] = static_cast<float>(static_cast<int32_t>(v)) * 0x1p-31f;
  }
  const RowReduction fn = [&](const MacPolicy& q, int64_t k0, int64_t k1, Tensor& y) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      v[static_cast<size_t>(j)] =
          static_cast<float>(mac_reduce(q, a.data() + j * R + k0, b.data() + j * R + k0, k1 - k0, nullptr,
                                        [](uint64_t) { return 0u; }));  // no :sr: nothing draws
    y.copy_from(Tensor::from_vector({n}, v));
  };
  Tensor gathered = Tensor::zeros({n}), emulated = Tensor::zeros({n});
  DataParallelConfig c;
  c.mode = DataParallelConfig::Mode::Gather;
  c.ranks = ranks;
  c.rank = rank;
  c.full_rows = true;
  set_data_parallel(c);
  reduce_over_rows(p, R, gathered, "comm-check", fn);
  c.mode = DataParallelConfig::Mode::Emulate;
  set_data_parallel(c);
  reduce_over_rows(p, R, emulated, "comm-check", fn);
  set_data_parallel(DataParallelConfig{});
  const std::vector<float> g = gathered.to_vector(), e = emulated.to_vector();
  const bool reduce_ok = std::memcmp(g.data(), e.data(), g.size() * sizeof(float)) == 0;
  ok = ok && reduce_ok;
  if (report)
    out << fmt::format(
        "  reduce_over_rows (mul {}, acc {}): {} outputs x {} rows in {} rank shares, gathered vs "
        "emulated in one process: {}\n",
        o.mul, o.acc, n, R, ranks, reduce_ok ? "pass (bit-identical)" : "FAIL");
  // Agree on the verdict, then drop the communicator before static destruction (NCCL and the
  // CUDA runtime must not be torn down in an unspecified order at exit).
  w->barrier();
  set_world(std::make_shared<LocalCommunicator>());
  w.reset();
  if (report) out << (ok ? "comm-check: pass\n" : "comm-check: FAIL\n");
  return ok ? 0 : 1;
}

Runner add_comm_check_command(CLI::App& app) {
  auto o = std::make_shared<CommCheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "comm-check",
      "Run the data-parallel communication path once (allgather, reduce_over_rows) and check its bits");
  cmd->add_option("--comm", o->comm, "nccl (GPU ranks), mpi or local")->capture_default_str();
  cmd->add_option("--rows", o->rows, "Terms of each reduction over all ranks")->capture_default_str();
  cmd->add_option("--outputs", o->outputs, "Reductions")->capture_default_str();
  cmd->add_option("--mul", o->mul, "Multiplier format of the reductions")->capture_default_str();
  cmd->add_option("--acc", o->acc, "Accumulator format (binary32-valued: runs travel as binary32)")
      ->capture_default_str();
  return [o] { return run_comm_check(*o, std::cout); };
}

}  // namespace

EMU_COMMAND("comm-check", add_comm_check_command);

}  // namespace emu::cli
