// The CPU's fast route for split multipliers (docs/contract.md section 5.6):
// C = A B under `mul: split:fp32b|fp32f|fp32t|auto` with a plain fp32
// accumulator, mac_reduce's bits (tests/test_split_mul.cpp).
//
//   A (M, K) row-major with lda, B (K, N) row-major with ldb, C (M, N) with ldc:
//   C[i][j] = mac_reduce(p, A[i][0..K), B[0..K)[j], K, bias ? &bias[j] : null)
//
// Each operand is split into its parts once per GEMM (not once per term). Where
// every part of an output's row of A and column of B is 0 or within
// [2^-63, 2^63), each partial product (at most 2 x 11 significant bits) is an
// exact normal binary32 value and each accumulation R_fp32(acc + p) is one
// binary32 addition; the accumulator starts at +0 and so is never -0, which
// makes adding a zero product (a zero operand's parts) the skip mac_reduce does.
// Every other output (Inf, NaN, tiny or huge parts) runs mac_reduce itself.
#pragma once

#include <cstdint>

#include "numerics/mac.h"

namespace emu {

// Whether split_gemm computes p: a split scheme other than int16, acc plain
// fp32, no chunks, no fused runs, out not :sr.
bool split_gemm_applies(const MacPolicy& p);

void split_gemm(const MacPolicy& p, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                int64_t ldc, int64_t M, int64_t N, int64_t K, const float* bias, int threads);

// split:auto, split:fp32f: adds one GEMM's blocks to p.stats_slot
// (core/split_stats.h): output (i, j) is in range when row i of A and column j
// of B are (split_auto_in_range).
void count_split_range(const MacPolicy& p, const float* A, int64_t lda, const float* B, int64_t ldb,
                       int64_t M, int64_t N, int64_t K);

}  // namespace emu
