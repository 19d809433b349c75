// The split-multiplier GEMM (backends/cpu/split_gemm.h).
#include "backends/cpu/split_gemm.h"

#include <algorithm>
#include <vector>

#include "core/split_stats.h"
#include "numerics/parallel_for.h"

namespace emu {

namespace {

// Outputs per panel: one accumulator per output. 64 gives enough independent
// chains of binary32 additions (six per term each) to hide their latency; a
// dimension shorter than that takes 16 or 8, so padding stays small.
constexpr int64_t kLanes = 64;
int64_t lanes_for(int64_t n) { return n >= 64 ? 64 : n >= 16 ? 16 : 8; }
constexpr int64_t kFixedPerTask = 8;  // rows (or columns) of the other operand per task

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

// The split parts of A and B for one orientation: the lane operand (A's rows
// when lanes_rows, else B's columns) packed in panels of kLanes,
// [panel][k][lane] and zero-padded; the other one plain, [index][k]. And which
// rows and columns are safe.
struct SplitOperands {
  bool lanes_rows = false;
  int64_t lanes = kLanes;  // outputs per panel
  std::vector<float> a_hi, a_mi, a_lo, b_hi, b_mi, b_lo;
  std::vector<char> row_safe, col_safe;
};

int64_t panels_of(int64_t n, int64_t lanes) { return (n + lanes - 1) / lanes; }
// Where element (index, k) of an operand lies: in panels of `lanes`, or plain.
inline int64_t at(bool packed, int64_t lanes, int64_t index, int64_t k, int64_t K) {
  return packed ? ((index / lanes) * K + k) * lanes + index % lanes : index * K + k;
}

// Fills o (whose vectors keep their capacity from earlier calls: a GEMM called
// per block of a convolution would otherwise map and fault in fresh pages each time).
void split_operands(SplitOperands& o, SplitMul s, bool lanes_rows, const float* A, int64_t lda,
                    const float* B, int64_t ldb, int64_t M, int64_t N, int64_t K) {
  o.lanes_rows = lanes_rows;
  o.lanes = lanes_for(lanes_rows ? M : N);
  const int64_t L = o.lanes;
  const size_t a_size = (lanes_rows ? panels_of(M, L) * L : M) * K,
               b_size = (lanes_rows ? N : panels_of(N, L) * L) * K;
  for (std::vector<float>* v : {&o.a_hi, &o.a_mi, &o.a_lo}) v->assign(a_size, 0.0f);
  for (std::vector<float>* v : {&o.b_hi, &o.b_mi, &o.b_lo}) v->assign(b_size, 0.0f);
  o.row_safe.assign(M, 1), o.col_safe.assign(N, 1);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const Parts q = kernel_parts(s, A[i * lda + k]);
      const int64_t x = at(lanes_rows, L, i, k, K);
      o.a_hi[x] = q.hi, o.a_mi[x] = q.mi, o.a_lo[x] = q.lo;
      if (!q.safe) o.row_safe[i] = 0;
    }
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) {
      const Parts q = kernel_parts(s, B[k * ldb + j]);
      const int64_t x = at(!lanes_rows, L, j, k, K);
      o.b_hi[x] = q.hi, o.b_mi[x] = q.mi, o.b_lo[x] = q.lo;
      if (!q.safe) o.col_safe[j] = 0;
    }
}

// One term's partial products added to t in the scheme's order, a's parts
// first in every product (numerics/split_mul.h, split_mac_term).
template <SplitMul S>
inline float add_term(float t, float ah, float am, float al, float bh, float bm, float bl) {
  if constexpr (S == SplitMul::Fp32B) {
    t = t + ah * bh;
    t = t + ah * bm;
    t = t + am * bh;
    t = t + ah * bl;
    t = t + am * bm;
    t = t + al * bh;
  } else {  // fp32f (low parts scaled back), fp32t: hi*hi, hi*lo, lo*hi
    (void)am, (void)bm;
    t = t + ah * bh;
    t = t + ah * bl;
    t = t + al * bh;
  }
  return t;
}

// The fp32 accumulators of one panel's kLanes outputs: the lanes run over the
// columns of B (kRows false: row `fixed` of A against column panel `panel`) or
// over the rows of A (kRows true: row panel against column `fixed`). Each lane
// is one output's chain of binary32 additions, independent of the others.
template <SplitMul S, bool kRows, int64_t L>
void panel_sums(const SplitOperands& o, int64_t fixed, int64_t panel, int64_t K, float (&acc)[kLanes]) {
  const std::vector<float>&vh = kRows ? o.a_hi : o.b_hi, &vm = kRows ? o.a_mi : o.b_mi,
        &vl = kRows ? o.a_lo : o.b_lo;
  const std::vector<float>&sh = kRows ? o.b_hi : o.a_hi, &sm = kRows ? o.b_mi : o.a_mi,
        &sl = kRows ? o.b_lo : o.a_lo;
  const float *ph = &vh[panel * K * L], *pm = &vm[panel * K * L], *pl = &vl[panel * K * L];
  for (int64_t l = 0; l < L; ++l) acc[l] = 0.0f;
  const float *qh = &sh[fixed * K], *qm = &sm[fixed * K], *ql = &sl[fixed * K];  // the plain operand
  for (int64_t k = 0; k < K; ++k, ph += L, pm += L, pl += L) {
    const float h = qh[k], m = qm[k], w = ql[k];
    for (int64_t l = 0; l < L; ++l) {
      if constexpr (kRows)
        acc[l] = add_term<S>(acc[l], ph[l], pm[l], pl[l], h, m, w);
      else
        acc[l] = add_term<S>(acc[l], h, m, w, ph[l], pm[l], pl[l]);
    }
  }
}

template <SplitMul S, bool kRows>
void panel_sums_lanes(const SplitOperands& o, int64_t fixed, int64_t panel, int64_t K, float (&acc)[kLanes]) {
  if (o.lanes == 64)
    panel_sums<S, kRows, 64>(o, fixed, panel, K, acc);
  else if (o.lanes == 16)
    panel_sums<S, kRows, 16>(o, fixed, panel, K, acc);
  else
    panel_sums<S, kRows, 8>(o, fixed, panel, K, acc);
}

template <bool kRows>
void panel_sums(SplitMul s, const SplitOperands& o, int64_t fixed, int64_t panel, int64_t K,
                float (&acc)[kLanes]) {
  if (s == SplitMul::Fp32B)
    panel_sums_lanes<SplitMul::Fp32B, kRows>(o, fixed, panel, K, acc);
  else  // fp32f and fp32t share the product order
    panel_sums_lanes<SplitMul::Fp32F, kRows>(o, fixed, panel, K, acc);
}

// Bias and R_out as mac_finish does (nothing draws: the policy has no :sr).
float finish(const MacPolicy& p, double acc, int64_t K, const float* bias) {
  MacState s;
  s.acc = acc;
  return static_cast<float>(mac_finish(p, s, K, bias, [](uint64_t) { return 0u; }));
}

}  // namespace

bool split_gemm_applies(const MacPolicy& p) {
  const bool scheme = p.split == SplitMul::Fp32B || p.split == SplitMul::Fp32F ||
                      p.split == SplitMul::Fp32T || p.split == SplitMul::Auto;
  return !p.mul_exact && scheme && is_plain_fp32(p.acc) && p.chunk == 0 && p.fused == 0 &&
         !is_stochastic(p.out);
}

void split_gemm(const MacPolicy& p, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                int64_t ldc, int64_t M, int64_t N, int64_t K, const float* bias, int threads) {
  const bool automatic = p.split == SplitMul::Auto;
  // Lanes over B's columns, or over A's rows when there are more of them (a
  // convolution's few output channels against many pixels).
  const bool lanes_rows = M > N;
  // The schemes this GEMM may use, and (auto) which rows and columns are in fp32f's range.
  // The calling thread's buffers, reused (see split_operands). Plain references
  // for the tasks: a thread_local named inside them would be the pool thread's own.
  thread_local SplitOperands buffers[2];
  SplitOperands &fb = buffers[0], &ff = buffers[1];
  split_operands(fb, automatic ? SplitMul::Fp32B : p.split, lanes_rows, A, lda, B, ldb, M, N, K);
  std::vector<char> row_in(M, 0), col_in(N, 0);
  if (automatic) {
    split_operands(ff, SplitMul::Fp32F, lanes_rows, A, lda, B, ldb, M, N, K);
    for (int64_t i = 0; i < M; ++i) {
      row_in[i] = 1;
      for (int64_t k = 0; k < K && row_in[i]; ++k) row_in[i] = split_auto_in_range(A[i * lda + k]);
    }
    for (int64_t j = 0; j < N; ++j) {
      col_in[j] = 1;
      for (int64_t k = 0; k < K && col_in[j]; ++k) col_in[j] = split_auto_in_range(B[k * ldb + j]);
    }
  }
  const int64_t lane_count = lanes_rows ? M : N, fixed_count = lanes_rows ? N : M;
  const int64_t L = fb.lanes;
  const int64_t panels = panels_of(lane_count, L),
                fixed_blocks = (fixed_count + kFixedPerTask - 1) / kFixedPerTask;
  parallel_tasks(panels * fixed_blocks, threads, [&](int64_t task) {
    const int64_t panel = task % panels, f0 = (task / panels) * kFixedPerTask;
    const int64_t l0 = panel * L, lanes = std::min(L, lane_count - l0);
    for (int64_t f = f0; f < std::min(fixed_count, f0 + kFixedPerTask); ++f) {
      // Per lane: the output, its scheme (auto: fp32f when row and column are in range), whether its parts
      // are safe.
      int64_t row[kLanes], col[kLanes];
      bool use_f[kLanes] = {}, fast[kLanes] = {};
      bool any_f = false, any_b = false;
      for (int64_t l = 0; l < lanes; ++l) {
        row[l] = lanes_rows ? l0 + l : f;
        col[l] = lanes_rows ? f : l0 + l;
        use_f[l] = automatic ? row_in[row[l]] && col_in[col[l]] : p.split == SplitMul::Fp32F;
        const SplitOperands& o = automatic && use_f[l] ? ff : fb;
        fast[l] = o.row_safe[row[l]] && o.col_safe[col[l]];
        any_f |= fast[l] && use_f[l];
        any_b |= fast[l] && !use_f[l];
      }
      float acc_f[kLanes], acc_b[kLanes];
      const SplitMul first = automatic ? SplitMul::Fp32B : p.split;
      if (any_b || (!automatic && any_f)) {
        if (lanes_rows)
          panel_sums<true>(first, fb, f, panel, K, acc_b);
        else
          panel_sums<false>(first, fb, f, panel, K, acc_b);
      }
      if (automatic && any_f) {
        if (lanes_rows)
          panel_sums<true>(SplitMul::Fp32F, ff, f, panel, K, acc_f);
        else
          panel_sums<false>(SplitMul::Fp32F, ff, f, panel, K, acc_f);
      }
      for (int64_t l = 0; l < lanes; ++l) {
        const int64_t i = row[l], j = col[l];
        const float* b_bias = bias ? bias + j : nullptr;
        float y;
        if (fast[l]) {
          y = finish(p, automatic && use_f[l] ? acc_f[l] : acc_b[l], K, b_bias);
        } else {  // the definition itself, over B's column
          std::vector<float> column(static_cast<size_t>(K));
          for (int64_t k = 0; k < K; ++k) column[k] = B[k * ldb + j];
          y = static_cast<float>(
              mac_reduce(p, A + i * lda, column.data(), K, b_bias, [](uint64_t) { return 0u; }));
        }
        C[i * ldc + j] = y;
      }
    }
  });
}

void count_split_range(const MacPolicy& p, const float* A, int64_t lda, const float* B, int64_t ldb,
                       int64_t M, int64_t N, int64_t K) {
  if (!split_stats_counted(p) || M <= 0 || N <= 0) return;
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
  SplitRangeCounts c;
  c.in_outputs = rows * cols;
  c.out_outputs = static_cast<uint64_t>(M) * static_cast<uint64_t>(N) - c.in_outputs;
  c.in_terms = c.in_outputs * static_cast<uint64_t>(K);
  c.out_terms = c.out_outputs * static_cast<uint64_t>(K);
  split_stats_add(p.stats_slot, c);
}

}  // namespace emu
