// The arithmetic of the sequence ops (index_gather, index_sum, the temporal
// pools; core/backend_ops_sequence.h states what each computes), host+device,
// one definition for the CPU loops (backends/cpu/sequence_ops.cpp) and the
// CUDA kernels (backends/cuda/ops/sequence.cu). Their argument checks run on
// the host: core/sequence_checks.h.
#pragma once

#include <cstdint>
#include <vector>

#include "numerics/element_arith.h"
#include "numerics/mac.h"
#include "numerics/philox.h"
#include "numerics/row_reduce.h"
#include "numerics/stage_round.h"

namespace emu {

// --- arithmetic (host+device) ----------------------------------------------

// Whether plain binary32 additions from +0 give a sum's bits with a binary32
// result that needs no further rounding in acc (no draws, no chunks, acc fp32;
// zero terms change nothing then).
EMU_HD bool sequence_fp32_sum(const MacPolicy& p) {
  return !draws_random(p) && p.chunk == 0 && is_plain_fp32(p.acc);
}

// R_out of a sum v of K terms (a value of the last accumulator) at mac_reduce's
// output site 2K + chunks + 1 of output o (draw index o * sites + that site),
// on stream `stream`: the result of index_sum and of every one-term sum.
struct SequenceSumResult {
  Format out;
  FastRound fr;
  int chunk = 0;
  uint64_t seed = 0, stream = 0;

  EMU_HD SequenceSumResult(const MacPolicy& p, uint64_t s, uint64_t st)
      : out(p.out), fr(p.out), chunk(p.chunk), seed(s), stream(st) {}
  EMU_HD float operator()(double v, int64_t K, uint64_t o, uint64_t sites) const {
    if (is_plain_fp32(out) && is_binary32_value(v)) return static_cast<float>(v);
    const uint64_t chunks = chunk > 0 && K > 0 ? static_cast<uint64_t>((K + chunk - 1) / chunk) : 1;
    const uint32_t r = is_stochastic(out)
                           ? philox_draw(seed, stream, o * sites + 2 * static_cast<uint64_t>(K) + chunks + 1)
                           : 0;
    return static_cast<float>(fr.on ? fr(v) : round_value(out, v, r));
  }
};

// The plain sum (mul exact, p's acc and chunks) of K terms read by terms(k, &a, &b)
// (b = 1), ascending, left in the last accumulator; output o draws at o * sites + site.
template <class Terms>
EMU_HD double sequence_sum(const MacRounding& sum, bool native, int64_t K, const Terms& terms, uint64_t seed,
                           uint64_t stream, uint64_t o, uint64_t sites) {
  return reduce_terms(sum, native, K, terms, RowDraws{seed, stream, o * sites});
}

// R_out of the sum of one term v (site stride K = 1), element i: the backward of
// every temporal pool. Plain fp32 throughout: R_fp32(+0 + v) (a zero v is a
// skipped term and leaves +0), NaN made canonical.
struct OneTermSum {
  MacRounding sum;
  SequenceSumResult result;
  uint64_t sites;
  bool sum_native, native;

  EMU_HD OneTermSum(const MacPolicy& p, uint64_t seed, uint64_t stream)
      : sum(plain_sum_policy(p)),
        result(p, seed, stream),
        sites(mac_site_count(1, p.chunk)),
        sum_native(native_sum(p)),
        native(sequence_fp32_sum(p) && is_plain_fp32(p.out)) {}
  EMU_HD float operator()(float v, uint64_t i) const {
    if (native) return fp32::add(0.0f, v);
    auto term = [v](int64_t, float* a, float* b) {
      *a = v;
      *b = 1.0f;
    };
    return result(sequence_sum(sum, sum_native, 1, term, result.seed, result.stream, i, sites), 1, i, sites);
  }
};

// The running maximum of a temporal max pool: whether step value `val` replaces
// `best` (`have`: a step was taken before). Strictly greater keeps the earliest
// of equal values; a NaN replaces any number, and the first NaN stays.
EMU_HD bool max_step_takes(bool have, float best, float val) {
  return !have || (best == best && (val > best || val != val));
}

// Temporal pools: x (N,C,L) with time_dim 2, (N,L,C) with time_dim 1; element
// (n, c, step t) at base(n, c) + t * step().
struct TimeLayout {
  int64_t N = 0, C = 0, L = 0;
  int time_dim = 2;
  EMU_HD int64_t base(int64_t n, int64_t c) const { return time_dim == 2 ? (n * C + c) * L : n * L * C + c; }
  EMU_HD int64_t step() const { return time_dim == 2 ? 1 : C; }
  std::vector<int64_t> x_shape() const {
    return time_dim == 2 ? std::vector<int64_t>{N, C, L} : std::vector<int64_t>{N, L, C};
  }
};

}  // namespace emu
