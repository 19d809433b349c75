// The split-multiplier GEMM (backends/cpu/split_gemm.h).
#include "backends/cpu/split_gemm.h"

#include <algorithm>
#include <vector>

#include "core/split_stats.h"
#include "numerics/parallel_for.h"

namespace emu {

namespace {

constexpr int64_t kLanes = 8;   // columns per panel: one accumulator per column
constexpr int64_t kRowsPerTask = 8;

// 0, or 2^-63 <= |x| < 2^63: the product of two such parts is 0 or an exact
// normal binary32 value.
inline bool safe_part(float x) {
  const uint32_t u = float_bits(x) & 0x7fffffffu, e = u >> 23;
  return u == 0 || (e >= 127 - 63 && e < 127 + 63);
}

// An operand's parts as the kernel uses them: fp32f's low part scaled back by
// 2^-12 (exact: an fp16 value times 2^-12 stays normal), so that every scheme's
// partial product is one binary32 product of two stored parts.
struct Parts {
  float hi, mi, lo;
  bool safe;
};
inline Parts kernel_parts(SplitMul s, float x) {
  const SplitParts q = split_parts(s, x);
  Parts r{q.hi, q.mi, s == SplitMul::Fp32F ? fp32::mul(q.lo, 1.0f / 4096.0f) : q.lo, false};
  r.safe = safe_part(r.hi) && safe_part(r.mi) && safe_part(r.lo) && safe_part(q.lo);
  return r;
}

// The split parts of A's rows (row-major, K per row) and of B's columns (panels
// of kLanes columns, [panel][k][lane]) for one scheme, and which rows and
// columns are safe.
struct SplitOperands {
  std::vector<float> a_hi, a_mi, a_lo, b_hi, b_mi, b_lo;
  std::vector<char> row_safe, col_safe;
};

SplitOperands split_operands(SplitMul s, const float* A, int64_t lda, const float* B, int64_t ldb, int64_t M,
                             int64_t N, int64_t K) {
  SplitOperands o;
  const int64_t panels = (N + kLanes - 1) / kLanes;
  o.a_hi.resize(M * K), o.a_mi.resize(M * K), o.a_lo.resize(M * K);
  o.b_hi.assign(panels * K * kLanes, 0.0f), o.b_mi = o.b_hi, o.b_lo = o.b_hi;
  o.row_safe.assign(M, 1), o.col_safe.assign(N, 1);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const Parts q = kernel_parts(s, A[i * lda + k]);
      o.a_hi[i * K + k] = q.hi, o.a_mi[i * K + k] = q.mi, o.a_lo[i * K + k] = q.lo;
      if (!q.safe) o.row_safe[i] = 0;
    }
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) {
      const Parts q = kernel_parts(s, B[k * ldb + j]);
      const int64_t at = ((j / kLanes) * K + k) * kLanes + j % kLanes;
      o.b_hi[at] = q.hi, o.b_mi[at] = q.mi, o.b_lo[at] = q.lo;
      if (!q.safe) o.col_safe[j] = 0;
    }
  return o;
}

// The fp32 accumulators of row i against one panel, every partial product
// added in the scheme's order (numerics/split_mul.h, split_mac_term).
template <SplitMul S>
void panel_sums(const SplitOperands& o, int64_t i, int64_t panel, int64_t K, float (&acc)[kLanes]) {
  const float *ah = &o.a_hi[i * K], *am = &o.a_mi[i * K], *al = &o.a_lo[i * K];
  const float *bh = &o.b_hi[panel * K * kLanes], *bm = &o.b_mi[panel * K * kLanes], *bl = &o.b_lo[panel * K * kLanes];
  for (int64_t l = 0; l < kLanes; ++l) acc[l] = 0.0f;
  for (int64_t k = 0; k < K; ++k, bh += kLanes, bm += kLanes, bl += kLanes) {
    const float h = ah[k], m = am[k], w = al[k];
    for (int64_t l = 0; l < kLanes; ++l) {
      float t = acc[l];
      if constexpr (S == SplitMul::Fp32B) {
        t = t + h * bh[l];
        t = t + h * bm[l];
        t = t + m * bh[l];
        t = t + h * bl[l];
        t = t + m * bm[l];
        t = t + w * bh[l];
      } else {  // fp32f, fp32t: hi*hi, hi*lo, lo*hi
        t = t + h * bh[l];
        t = t + h * bl[l];
        t = t + w * bh[l];
      }
      acc[l] = t;
    }
  }
}

// Bias and R_out as mac_finish does (nothing draws: the policy has no :sr).
float finish(const MacPolicy& p, double acc, int64_t K, const float* bias) {
  MacState s;
  s.acc = acc;
  return static_cast<float>(mac_finish(p, s, K, bias, [](uint64_t) { return 0u; }));
}

}  // namespace

bool split_gemm_applies(const MacPolicy& p) {
  const bool scheme = p.split == SplitMul::Fp32B || p.split == SplitMul::Fp32F || p.split == SplitMul::Fp32T ||
                      p.split == SplitMul::Auto;
  return !p.mul_exact && scheme && is_plain_fp32(p.acc) && p.chunk == 0 && !is_stochastic(p.out);
}

void split_gemm(const MacPolicy& p, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                int64_t ldc, int64_t M, int64_t N, int64_t K, const float* bias, int threads) {
  const bool automatic = p.split == SplitMul::Auto;
  // The schemes this GEMM may use, and (auto) which rows and columns are in fp32f's range.
  const SplitOperands fb = split_operands(automatic ? SplitMul::Fp32B : p.split, A, lda, B, ldb, M, N, K);
  SplitOperands ff;
  std::vector<char> row_in(M, 0), col_in(N, 0);
  if (automatic) {
    ff = split_operands(SplitMul::Fp32F, A, lda, B, ldb, M, N, K);
    for (int64_t i = 0; i < M; ++i) {
      row_in[i] = 1;
      for (int64_t k = 0; k < K && row_in[i]; ++k) row_in[i] = split_auto_in_range(A[i * lda + k]);
    }
    for (int64_t j = 0; j < N; ++j) {
      col_in[j] = 1;
      for (int64_t k = 0; k < K && col_in[j]; ++k) col_in[j] = split_auto_in_range(B[k * ldb + j]);
    }
  }
  const int64_t panels = (N + kLanes - 1) / kLanes, row_blocks = (M + kRowsPerTask - 1) / kRowsPerTask;
  parallel_tasks(panels * row_blocks, threads, [&](int64_t task) {
    const int64_t panel = task % panels, i0 = (task / panels) * kRowsPerTask;
    const int64_t j0 = panel * kLanes, lanes = std::min(kLanes, N - j0);
    for (int64_t i = i0; i < std::min(M, i0 + kRowsPerTask); ++i) {
      // Per lane: the scheme (auto: fp32f when row and column are in range) and whether its parts are safe.
      bool use_f[kLanes] = {}, fast[kLanes] = {};
      bool any_f = false, any_b = false;
      for (int64_t l = 0; l < lanes; ++l) {
        const int64_t j = j0 + l;
        use_f[l] = automatic ? row_in[i] && col_in[j] : p.split == SplitMul::Fp32F;
        const SplitOperands& o = automatic && use_f[l] ? ff : fb;
        fast[l] = o.row_safe[i] && o.col_safe[j];
        any_f |= fast[l] && use_f[l];
        any_b |= fast[l] && !use_f[l];
      }
      float acc_f[kLanes], acc_b[kLanes];
      if (automatic) {
        if (any_f) panel_sums<SplitMul::Fp32F>(ff, i, panel, K, acc_f);
        if (any_b) panel_sums<SplitMul::Fp32B>(fb, i, panel, K, acc_b);
      } else if (any_f || any_b) {
        if (p.split == SplitMul::Fp32B) panel_sums<SplitMul::Fp32B>(fb, i, panel, K, acc_b);
        else panel_sums<SplitMul::Fp32F>(fb, i, panel, K, acc_b);  // fp32t has fp32f's product order
      }
      for (int64_t l = 0; l < lanes; ++l) {
        const int64_t j = j0 + l;
        const float* b_bias = bias ? bias + j : nullptr;
        float y;
        if (fast[l]) {
          y = finish(p, automatic && use_f[l] ? acc_f[l] : acc_b[l], K, b_bias);
        } else {  // the definition itself, over B's column
          std::vector<float> col(static_cast<size_t>(K));
          for (int64_t k = 0; k < K; ++k) col[k] = B[k * ldb + j];
          y = static_cast<float>(mac_reduce(p, A + i * lda, col.data(), K, b_bias, [](uint64_t) { return 0u; }));
        }
        C[i * ldc + j] = y;
      }
    }
  });
}

void count_split_auto(const MacPolicy& p, const float* A, int64_t lda, const float* B, int64_t ldb, int64_t M,
                      int64_t N, int64_t K) {
  if (p.mul_exact || p.split != SplitMul::Auto || p.stats_slot < 0 || M <= 0 || N <= 0) return;
  uint64_t rows = 0, cols = 0;
  for (int64_t i = 0; i < M; ++i) {
    bool in = true;
    for (int64_t k = 0; k < K && in; ++k) in = split_auto_in_range(A[i * lda + k]);
    rows += in;
  }
  for (int64_t j = 0; j < N; ++j) {
    bool in = true;
    for (int64_t k = 0; k < K && in; ++k) in = split_auto_in_range(B[k * ldb + j]);
    cols += in;
  }
  SplitAutoCounts c;
  c.fp32f_outputs = rows * cols;
  c.fp32b_outputs = static_cast<uint64_t>(M) * static_cast<uint64_t>(N) - c.fp32f_outputs;
  c.fp32f_terms = c.fp32f_outputs * static_cast<uint64_t>(K);
  c.fp32b_terms = c.fp32b_outputs * static_cast<uint64_t>(K);
  split_stats_add(p.stats_slot, c);
}

}  // namespace emu
