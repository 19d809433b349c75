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

// ---------------------------------------------------------------------------
// Operands made on demand. A convolution's im2col matrix or gathered gradient
// is never stored whole: the fast paths ask for the blocks they pack into their
// panels, and the operand writes them there straight from the tensors.

// A block of values: rows x cols floats, row i at p + i * ld.
struct GemmValues {
  const float* p;
  int64_t rows, cols, ld;
};

// The data check of fast path (d): whether every element of v is an integer
// times 2^-frac with |integer| <= 2^15 - 1. Sets *frac (the smallest such frac,
// 0..64) and *max_int (the largest |integer|). Public for its tests.
bool gemm_integer_scan(const GemmValues& v, int* frac, double* max_int);

// A (M, K) or B (K, N) operand, addressed by term k in [0, K) and index x (a
// row of A, a column of B).
class GemmOperand {
 public:
  virtual ~GemmOperand() = default;
  // dst[q * ld + l] = element (term k0 + q, index x0 + l) for q < kc, l < nx.
  virtual void fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const = 0;
  // Every element is 0 or one of these values (the data checks of the fast
  // paths, finite and integer-valued operands, read them instead of the operand).
  virtual GemmValues values() const = 0;
};

// A row-major matrix as an operand: `of_rows` for A (M, K), `of_columns` for B (K, N).
class MatrixOperand final : public GemmOperand {
 public:
  static MatrixOperand of_rows(const float* a, int64_t lda, int64_t M, int64_t K) {
    return {a, lda, M, K, true};
  }
  static MatrixOperand of_columns(const float* b, int64_t ldb, int64_t K, int64_t N) {
    return {b, ldb, K, N, false};
  }
  void fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const override;
  GemmValues values() const override;

 private:
  MatrixOperand(const float* p, int64_t ld, int64_t rows, int64_t cols, bool a)
      : p_(p), ld_(ld), rows_(rows), cols_(cols), a_(a) {}
  const float* p_;
  int64_t ld_, rows_, cols_;
  bool a_;
};

// Where mac_gemm_operands writes: C(i, j) at C[i * ldc + (col_offset ? col_offset[j] : j)], so that a
// convolution's output lands in its (N, C, H, W) layout; the bias indexed by column j (as in mac_gemm)
// or, with bias_per_row, by row i.
struct GemmOutput {
  float* C = nullptr;
  int64_t ldc = 0;
  const int64_t* col_offset = nullptr;
  const float* bias = nullptr;
  bool bias_per_row = false;
};

// C(i, j) = mac_reduce(p, A(i, 0..K), B(0..K, j), K, bias, draw_o) with o = i*N + j, as mac_gemm,
// for operands made on demand. The fast paths (a)-(f) take them block by block (the kernels of
// (a)-(e) straight into their packed panels); the generic path and split schemes (which run the
// generic path here) store them whole first. Returns the path.
GemmPath mac_gemm_operands(const MacPolicy& p, const GemmOperand& A, const GemmOperand& B,
                           const GemmOutput& out, int64_t M, int64_t N, int64_t K, const GemmDraws& draws,
                           int threads);

}  // namespace emu
