#include "core/comm_reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/comm.h"
#include "numerics/format_spec.h"

namespace emu {
namespace {

DataParallelConfig& config() {
  static DataParallelConfig c;
  return c;
}

bool draws(const MacPolicy& p) {
  return is_stochastic(p.acc) || (!p.mul_exact && is_stochastic(p.mul)) || is_stochastic(p.out) ||
         is_stochastic(p.acc_outer);
}

}  // namespace

void set_data_parallel(const DataParallelConfig& c) { config() = c; }
const DataParallelConfig& data_parallel() { return config(); }

std::vector<float> combine_runs(const MacPolicy& p, const std::vector<double>& gathered, int ranks,
                                int64_t runs, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  const int64_t per_rank = runs * n;
  for (int64_t o = 0; o < n; ++o) {
    double outer = 0.0;  // +0 in acc_outer
    for (int r = 0; r < ranks; ++r)
      for (int64_t j = 0; j < runs; ++j)
        outer = add_into(p.acc_outer, outer, gathered[static_cast<size_t>(r * per_rank + j * n + o)]);
    y[static_cast<size_t>(o)] = static_cast<float>(round_value(p.out, outer));
  }
  return y;
}

void reduce_over_rows(const MacPolicy& p, int64_t rows, Tensor& out, const std::string& what,
                      const RowReduction& fn) {
  const DataParallelConfig& c = config();
  if (c.mode == DataParallelConfig::Mode::Off) {
    fn(p, 0, rows, out);
    return;
  }
  if (draws(p))
    throw std::invalid_argument(fmt::format(
        "{}: data-parallel reductions do not support stochastic rounding (:sr) in mul/acc/acc_outer/grads "
        "(the draw sites of a split reduction are not defined yet); use a deterministic rounding",
        what));
  const bool global_rows = c.mode == DataParallelConfig::Mode::Emulate || c.full_rows;
  const int64_t total = global_rows ? rows : rows * c.ranks;
  if (total % c.ranks != 0)
    throw std::invalid_argument(
        fmt::format("{}: {} rows do not split into {} equal rank shares", what, total, c.ranks));
  const int64_t share = total / c.ranks;
  if (p.chunk > 0 && share % p.chunk != 0)
    throw std::invalid_argument(
        fmt::format("{}: the per-rank share of {} rows is not a multiple of the policy's chunk {} "
                    "(data-parallel runs must "
                    "align with the chunks)",
                    what, share, p.chunk));
  const int64_t run = p.chunk > 0 ? p.chunk : share;
  // Each rank's run is a chunk of the equivalent reduction, and fused runs never
  // straddle a chunk (docs/contract.md section 4.8).
  if (p.fused > 0 && run % p.fused != 0)
    throw std::invalid_argument(
        fmt::format("{}: the data-parallel run of {} rows is not a multiple of the policy's fused {} (a "
                    "fused run must not "
                    "straddle a rank's share)",
                    what, run, p.fused));
  if (p.acc.accumulator_only)
    throw std::invalid_argument(
        fmt::format("{}: data-parallel reductions carry run results in binary32; acc {} is accumulator-only",
                    what, format_name(p.acc)));
  // The runs of rows [k_begin, k_begin + share), each left unrounded in acc (out = acc: R_acc of an
  // acc value is itself), run-major into v.
  const int64_t runs = share / run, n = out.numel();
  MacPolicy q = p;
  q.chunk = 0;
  q.out = p.acc;
  auto runs_of = [&](int64_t k_begin, std::vector<double>& v) {
    for (int64_t j = 0; j < runs; ++j) {
      Tensor part = Tensor::zeros(out.shape(), out.device());
      fn(q, k_begin + j * run, k_begin + (j + 1) * run, part);
      std::vector<float> f = part.to_vector();
      for (int64_t o = 0; o < n; ++o) v.push_back(f[static_cast<size_t>(o)]);
    }
  };
  std::vector<double> all;
  if (c.mode == DataParallelConfig::Mode::Emulate) {
    // One process: every virtual rank's runs in rank order (the sparse ops chunk stored entries,
    // so the op's own chunk would not give row runs; this is the gather's arithmetic exactly).
    for (int r = 0; r < c.ranks; ++r) runs_of(share * r, all);
  } else {
    std::vector<double> mine;
    runs_of(c.full_rows ? share * c.rank : 0, mine);
    all = world().allgather_doubles(mine);
  }
  if (static_cast<int64_t>(all.size()) != c.ranks * runs * n)
    throw std::runtime_error(fmt::format("{}: gathered {} run values, expected {} ranks x {} runs x {}", what,
                                         all.size(), c.ranks, runs, n));
  std::vector<float> y = combine_runs(p, all, c.ranks, runs, n);
  Tensor result = Tensor::from_vector(out.shape(), y);
  out.copy_from(result);
}

}  // namespace emu

namespace emu {

Tensor sample_term_range(const Tensor& x, int64_t k0, int64_t k1) {
  const int64_t N = x.dim(0);
  const int64_t C = x.ndim() > 1 ? x.dim(1) : 1;
  const int64_t S = N > 0 && C > 0 ? x.numel() / (N * C) : 1;
  if (k0 == 0 && k1 == N * S) return x;
  const int64_t n0 = k0 / S, n1 = (k1 + S - 1) / S;
  Tensor part = x.narrow(0, n0, n1 - n0).clone();
  if (part.numel() == 0) return part;
  // Only the first and the last sample can hold terms outside [k0, k1): their leading and trailing
  // steps, zeroed through fill on views (the copy may live on any device).
  Tensor steps = part.view({n1 - n0, C, S});
  const int64_t lead = k0 - n0 * S, tail = n1 * S - k1;
  if (lead > 0) steps.narrow(0, 0, 1).narrow(2, 0, lead).fill(0.0f);
  if (tail > 0) steps.narrow(0, n1 - n0 - 1, 1).narrow(2, S - tail, tail).fill(0.0f);
  return part;
}

}  // namespace emu

namespace emu {

Tensor rows_outside_zeroed(const Tensor& x, int64_t k0, int64_t k1) {
  const int64_t R = x.dim(0);
  if (k0 == 0 && k1 == R) return x;
  Tensor part = x.clone();
  // Rows [0, k0) and [k1, R) are +0, written through fill on views (any device).
  if (k0 > 0) part.narrow(0, 0, std::min(k0, R)).fill(0.0f);
  if (k1 < R) part.narrow(0, k1, R - k1).fill(0.0f);
  return part;
}

}  // namespace emu
