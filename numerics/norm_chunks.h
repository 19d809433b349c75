// A long reduction (a batch-norm statistic over N x S terms) split into pieces
// that run in parallel and are then combined, host+device, with the bits of
// mac_reduce (numerics/mac.h) over all terms: docs/contract.md section 4.4 defines
// a chunked reduction as runs of `chunk` terms, each accumulated from +0 in
// acc, whose results are added in order into acc_outer. So under a policy with
// chunks each run is one independent piece (any thread may compute it), and
// one thread adds the pieces in run order; without chunks there is one piece,
// the whole reduction, and combining it is taking it.
//
// A piece is reduce_terms (numerics/stage_round.h) over its run's terms, with
// the run's policy (the reduction's, chunk 0, result left in acc) and the draws
// of the whole reduction: term k of the run draws at sites 2k and 2k + 1 of the
// whole output (section 4.6), as in mac_reduce. reduce_terms ends with R_acc of
// the run's sum, which is a value of acc already: a rounding of a value of the
// format returns it under every mode (under :sr no bit is cut off, so it never
// rounds away; docs/contract.md section 2.4), so that last draw (whatever its
// site) changes nothing. The combination replays mac_step's promotions (the
// draw of run c at site 2K + c) and mac_finish, so it is mac_reduce's tail
// itself.
#pragma once

#include <cstdint>

#include "numerics/element_arith.h"
#include "numerics/mac.h"
#include "numerics/row_reduce.h"
#include "numerics/stage_round.h"

namespace emu {

// Runs of a reduction of K terms: ceil(K / chunk), or 1 without chunks or when
// K = 0 (the count mac_site_count and mac_finish use).
EMU_HD int64_t chunk_runs(int64_t K, int chunk) { return chunk > 0 && K > 0 ? (K + chunk - 1) / chunk : 1; }

// A reduction under `p` (a sum policy or a products policy, its `out` the
// format the result is left in) evaluated as chunk_runs pieces.
struct ChunkedReduce {
  MacPolicy whole;    // the reduction's policy
  MacRounding piece;  // one piece: `whole` without chunks (with chunks: left in acc)
  bool native;        // native binary32 arithmetic gives a piece's bits

  // `sum`: every b_k is 1 (the products are exact, so only the additions matter).
  // The norms' sums and dots are docs/contract.md section 4.7's: never fused (section 4.8).
  EMU_HD ChunkedReduce(const MacPolicy& p, bool sum)
      : whole(unfused(p)), piece(piece_policy(unfused(p))), native(false) {
    const MacPolicy& q = piece.p;
    native = sum ? native_sum(q) && is_plain_fp32(q.out) : native_dot(q) && !custom_mul(q);
  }

  EMU_HD static MacPolicy piece_policy(const MacPolicy& p) {
    if (p.chunk == 0) return p;
    MacPolicy q = p;
    q.chunk = 0;
    q.out = p.acc;
    return q;
  }

  // Piece j of a reduction of K terms whose term k `terms(k, &a, &b)` reads;
  // `draw(site)` the draws of the whole reduction (the output's sites).
  template <class Terms, class Draw>
  EMU_HD double run(int64_t j, int64_t K, const Terms& terms, const Draw& draw) const {
    if (whole.chunk == 0) return reduce_terms(piece, native, K, terms, draw);
    const int64_t k0 = j * whole.chunk, k1 = k0 + whole.chunk < K ? k0 + whole.chunk : K;
    const uint64_t shift = 2 * static_cast<uint64_t>(k0);  // local term k' is term k0 + k'
    return reduce_terms(
        piece, native, k1 - k0, [&](int64_t k, float* a, float* b) { terms(k0 + k, a, b); },
        [&](uint64_t site) { return draw(site + shift); });
  }
};

// The result of the reduction under `whole` (a ChunkedReduce's policy) from its
// chunk_runs(K, whole.chunk) pieces, in run order.
template <class Draw>
EMU_HD double combine_runs(const MacPolicy& whole, const double* pieces, int64_t K, const Draw& draw) {
  if (whole.chunk == 0) return pieces[0];
  const int64_t runs = chunk_runs(K, whole.chunk);
  MacSums s;  // `whole` is unfused (ChunkedReduce): no fused-run state
  for (int64_t c = 0; c < runs; ++c) {
    // A zero term at the start of run c: mac_step promotes run c - 1 (s.acc) into
    // acc_outer, restarts acc from +0 and skips the term.
    if (c > 0) mac_step(whole, s, K, c * whole.chunk, 0.0f, 0.0f, draw);
    s.acc = pieces[c];
  }
  return mac_finish(whole, s, K, nullptr, draw);
}

}  // namespace emu
