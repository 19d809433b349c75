// Grad-weight reductions of a data-parallel run (docs/parallel.md, docs/contract.md section 4).
//
// A data-parallel run over N ranks is the single-process run in which every
// reduction over batch rows (Linear/Conv2d/GCN grad-weight and bias-grad) is
// split into runs of the per-rank share of the rows (or of the policy's
// `chunk` C when set, the share being a multiple of C), each run accumulated
// from +0 in `acc`, the run results added in rank order (run order within a
// rank) in `acc_outer`, and the sum rounded to the output format:
//
//   outer = +0;  for r in ranks, j in runs of r:  outer = R_acc_outer(outer + run[r][j])
//   y = R_out(outer)
//
// which is mac_reduce (numerics/mac.h) with chunk = the run length. Layers call
// reduce_over_rows for each such reduction; it does the plain reduction when
// data parallelism is off, the chunked one in one process under
// `parallel.equivalent_ranks: N`, and the per-rank runs + rank-ordered gather
// under MPI/NCCL.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/tensor.h"
#include "numerics/mac.h"

namespace emu {

struct DataParallelConfig {
  enum class Mode : uint8_t {
    Off,      // plain reductions
    Emulate,  // one process computes the N ranks' runs itself and adds them in rank order
    Gather,   // this process is rank `rank` of `ranks`: runs of its rows, gathered through world()
  };
  Mode mode = Mode::Off;
  int ranks = 1;
  int rank = 0;
  // Every rank holds all rows (the GCN's node set): under Gather the rank takes its contiguous
  // share [rank*rows/N, (rank+1)*rows/N); otherwise a rank's rows are its batch shard.
  bool full_rows = false;
};
void set_data_parallel(const DataParallelConfig& c);
const DataParallelConfig& data_parallel();

// Computes the reduction over terms [k0, k1) of the `rows` terms (terms outside count as absent:
// zero operands, skipped) under policy p into out (the reduction's output shape).
using RowReduction = std::function<void(const MacPolicy& p, int64_t k0, int64_t k1, Tensor& out)>;

// out = the reduction over `rows` terms under p, split as the data-parallel setting says.
// `what` names the layer and reduction for errors ("conv1 grad-weight"). Throws
// std::invalid_argument when rows do not divide into the ranks' shares, the share into p.chunk,
// a format draws (:sr) or acc holds values beyond binary32 (accumulator-only) under Gather.
void reduce_over_rows(const MacPolicy& p, int64_t rows, Tensor& out, const std::string& what,
                      const RowReduction& fn);

// Run results (values of p.acc, exact) gathered from every rank, in (rank, run) order per output:
// parts[r] holds rank r's runs, run-major (runs * n values); returns y[o] = R_out(sum over r, j
// of parts[r][j*n + o] added in that order in acc_outer). Exposed for tests.
std::vector<float> combine_runs(const MacPolicy& p, const std::vector<double>& gathered, int ranks,
                                int64_t runs, int64_t n);

}  // namespace emu

namespace emu {

// For a reduction whose terms are k = n * S + s over x (N, C, S...) (conv grad-weight: (n, oh, ow)):
// the samples [k0 / S, ceil(k1 / S)) of x with the terms outside [k0, k1) set to +0 (absent: zero
// operands are skipped); x itself when [k0, k1) covers every term.
Tensor sample_term_range(const Tensor& x, int64_t k0, int64_t k1);

}  // namespace emu

namespace emu {

// x (R, ...) itself when [k0, k1) covers its R rows, else a copy whose rows outside [k0, k1) are +0.
Tensor rows_outside_zeroed(const Tensor& x, int64_t k0, int64_t k1);

}  // namespace emu
