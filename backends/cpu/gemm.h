// Matrix multiply under an emulated multiply-accumulate policy (CPU).
//
//   A: (M, K) row-major, leading dimension lda; B: (K, N) row-major, ldb;
//   bias: (N) or null -> C: (M, N) row-major, ldc, with
//   C[i][j] = (float) mac_reduce(p, A[i][0..K), B[0..K)[j], K, bias ? &bias[j] : null, draw_o)
//
// for every output o = i*N + j: the sequential reduction over k ascending of
// numerics/mac.h, bit for bit, whatever the thread count and whichever path runs.
// Callers that need a transposed operand pass a packed copy.
//
// Paths (docs/gemm.md): the generic path calls mac_reduce per output and is
// always correct; fast paths for common policies vectorise across output
// columns j (the k loop stays sequential per output) and are tested to give the
// same bits (tests/test_gemm.cpp). mac_gemm picks the fastest path that applies
// to the policy and, for some paths, to the data (finite operands, integer
// operands), and otherwise runs the generic one.
#pragma once

#include <cstdint>

#include "numerics/mac.h"

namespace emu {

// Stochastic rounding draws of a GEMM: output o's site s (numbering of
// numerics/mac.h: term k's product 2k, its accumulation 2k+1, chunk c's
// promotion 2K+c, bias 2K+chunks, output 2K+chunks+1) draws
//   philox_draw(seed, stream, o * mac_site_count(K, chunk) + s)   (numerics/mac.h).
struct GemmDraws {
  uint64_t seed = 0;
  uint64_t stream = 0;
};

// The implementations mac_gemm chooses from.
enum class GemmPath : uint8_t {
  Generic,     // mac_reduce per output
  Fp32,        // (a) mul fp32 / acc fp32, RNE: native binary32 multiply and add
  MulFmaF32,   // (b) mul eXmY (X <= 8, Y <= 21, RNE) / acc fp32: binary32 lanes, FMA magic-constant rounding
  MulRneF32,   // (b) mul eXmY (RNE) / acc fp32: binary64 products, magic-constant rounding
  MulIeeeF32,  // (b) mul eXmY (any mode but :sr, :nosub, :sat) / acc fp32: integer rounding
  AccIeee,     // (c) mul and acc eXmY with <= 11 significant bits, RNE: binary32 sums
  Int,         // (d) integer-valued operands, exact products, fixed-point accumulator
  Posit,       // (e) mul = acc = posit (RNE): binary64 lanes, per-binade grids
  Lut,    // (f) approximate multiplier (MacPolicy::lut) / acc fp32, no chunks: table products, binary32 sums
  Split,  // (g) split:fp32b|fp32f|fp32t|auto / acc fp32, no chunks: binary32 partial products and sums
          // (split_gemm.h)
};
const char* gemm_path_name(GemmPath path);

// The instruction sets the micro-kernels were compiled for (the build's -march),
// e.g. "AVX2 + FMA (256-bit vectors); int8: AVX2 vpmaddwd", for benchmark reports.
const char* gemm_kernel_isa();

// The fast path a policy qualifies for by its formats alone (data checks, e.g.
// finite or integer-valued operands, can still send mac_gemm to Generic).
GemmPath gemm_policy_path(const MacPolicy& p);

// C = A B under p; see the top of this file. threads <= 0: hardware concurrency.
void mac_gemm(const MacPolicy& p, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
              int64_t ldc, int64_t M, int64_t N, int64_t K, const float* bias, const GemmDraws& draws,
              int threads);

// mac_gemm that says which path ran; with force_generic the generic path runs
// (the reference the fast paths are tested against, and the benchmark baseline).
GemmPath mac_gemm_run(const MacPolicy& p, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                      int64_t ldc, int64_t M, int64_t N, int64_t K, const float* bias, const GemmDraws& draws,
                      int threads, bool force_generic = false);

}  // namespace emu
