// mac_gemm: the generic path (mac_reduce per output), the fast-path driver
// (threads, cache blocking, packing, chunk promotions, bias and output
// rounding) and the choice between them. Micro-kernels: gemm_kernels.h.
#include "backends/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <type_traits>
#include <vector>

#include "backends/cpu/block_copy.h"
#include "backends/cpu/gemm_kernels.h"
#include "backends/cpu/split_gemm.h"
#include "backends/cpu/uninit_buffer.h"
#include "numerics/parallel_for.h"
#include "numerics/philox.h"

namespace emu {

using namespace gemm_detail;

namespace {

// ---------------------------------------------------------------------------
// Formats

// Every value of f is a binary32 value (what the fast paths' accumulators hold).
bool binary32_valued(const Format& f) { return !f.accumulator_only; }

// IEEE-like RNE formats with subnormals whose significand has <= 11 bits.
bool short_ieee_rne(const Format& f) {
  return f.family == Family::Ieee && f.rounding == Rounding::NearestEven && f.subnormals &&
         f.man_bits <= 10 && binary32_valued(f);
}

// Every value of `sub` is a value of `super` (IEEE-like, same specials kind not required:
// only finite values are compared; Inf/NaN products are flagged by the kernels).
bool ieee_values_within(const Format& sub, const Format& super) {
  return sub.family == Family::Ieee && super.family == Family::Ieee && sub.man_bits <= super.man_bits &&
         sub.max_finite <= super.max_finite && sub.min_normal >= super.min_normal &&
         sub.emin - sub.man_bits >= super.emin - super.man_bits;
}

bool mul_fast_ieee_rne(const Format& f) { return fast_ieee_rne_product_f_supported(f); }

// ---------------------------------------------------------------------------
// Operand scans

// Whether no element of v is Inf or NaN, rows split over the threads: a convolution's operand is
// its whole input tensor, which one thread scanning alone had cost ~1.5% of a ResNet-18 fp32 step.
bool all_finite(const GemmValues& v, int threads) {
  std::atomic<bool> found{false};
  const int64_t grain = std::max<int64_t>(1, 4 * kGrainElements / std::max<int64_t>(1, v.cols));
  parallel_for(v.rows, threads, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1 && !found.load(std::memory_order_relaxed); ++i) {
      const float* x = v.p + i * v.ld;
      uint32_t bad = 0;
      for (int64_t j = 0; j < v.cols; ++j) bad |= (float_bits(x[j]) & 0x7f800000u) == 0x7f800000u;
      if (bad) found.store(true, std::memory_order_relaxed);
    }
  });
  return !found.load();
}

}  // namespace

// Two passes that vectorise (no ctz or branch per element). The largest
// magnitude m fixes the finest grid that can pass, 2^-F with F = 14 - ilogb(m)
// (2^F m < 2^15): an element needing a finer one makes the integer of m reach
// 2^15. Each element x is then placed on that grid, iy = |x| 2^F, exactly when
// no set bit is shifted out (else: not integer-valued at F, so no grid passes).
// The smallest frac is F minus the trailing zeros common to all iy, which is
// the largest per-element need 150 - max(e, 1) - ctz(significand).
bool gemm_integer_scan(const GemmValues& v, int* frac, double* max_int) {
  uint32_t max_bits = 0;
  for (int64_t i = 0; i < v.rows; ++i) {
    const float* x = v.p + i * v.ld;
    uint32_t m = 0;
    for (int64_t j = 0; j < v.cols; ++j) m = std::max(m, float_bits(x[j]) & 0x7fffffffu);
    max_bits = std::max(max_bits, m);
  }
  if (max_bits >= 0x7f800000u) return false;  // Inf or NaN
  if (max_bits == 0) {
    *frac = 0;
    *max_int = 0.0;
    return true;
  }
  const int F = 14 - std::ilogb(bits_float(max_bits));
  uint32_t all_bits = 0, lost = 0;
  for (int64_t i = 0; i < v.rows; ++i) {
    const float* x = v.p + i * v.ld;
    for (int64_t j = 0; j < v.cols; ++j) {
      const uint32_t u = float_bits(x[j]) & 0x7fffffffu;
      const uint32_t e = u >> 23;
      const uint32_t sig = e != 0 ? (u & 0x7fffffu) | 0x800000u : u;
      // |x| 2^F = sig 2^t; t <= 14 since |x| <= m. Right shifts past 31 leave 0.
      const int32_t t = static_cast<int32_t>(e != 0 ? e : 1) - 150 + F;
      const uint32_t up = static_cast<uint32_t>(std::max(t, 0));
      const uint32_t down = static_cast<uint32_t>(std::min(std::max(-t, 0), 31));
      const uint32_t iy = (sig << up) >> down;
      lost |= (iy << down) ^ (sig << up);
      all_bits |= iy;
    }
  }
  if (lost != 0) return false;
  const int need = std::max(0, F - __builtin_ctz(all_bits));
  if (need > 64) return false;
  *frac = need;
  *max_int = std::ldexp(static_cast<double>(bits_float(max_bits)), need);
  return *max_int <= 32767.0;
}

namespace {

// ---------------------------------------------------------------------------
// The problem and what is done after the k loop.

struct Problem {
  const MacPolicy* p;
  const GemmOperand* A;  // (M, K)
  const GemmOperand* B;  // (K, N)
  GemmOutput out;
  int64_t M, N, K;
  GemmDraws draws;
  uint64_t sites;  // mac_site_count(K, chunk)

  float* c_at(int64_t i, int64_t j) const {
    return out.C + i * out.ldc + (out.col_offset ? out.col_offset[j] : j);
  }
  const float* bias_at(int64_t i, int64_t j) const {
    return out.bias ? out.bias + (out.bias_per_row ? i : j) : nullptr;
  }
};

// Chunk promotions, bias and output rounding, as at the end of mac_reduce,
// with shortcuts where one binary32 operation is the exact rounding.
class Epilogue {
 public:
  Epilogue(const Problem& pb, bool acc_binary32) : pb_(pb), p_(*pb.p) {
    chunked_ = p_.chunk > 0;
    chunks_ = chunked_ && pb.K > 0 ? static_cast<uint64_t>((pb.K + p_.chunk - 1) / p_.chunk) : 1;
    tail_ = 2 * static_cast<uint64_t>(pb.K);
    last_ = chunked_ ? p_.acc_outer : p_.acc;
    // Values reaching the bias are binary32 values when the last accumulator is.
    const bool last_b32 = chunked_ ? binary32_valued(p_.acc_outer) : acc_binary32;
    promote_fp32_ = chunked_ && is_plain_fp32(p_.acc_outer) && acc_binary32;
    bias_fp32_ = is_plain_fp32(last_) && last_b32;
    // R_out(v) = v when v is already a value of out (non-stochastic modes).
    out_identity_ = !is_stochastic(p_.out) &&
                    ((p_.out == last_ && binary32_valued(last_)) || (is_plain_fp32(p_.out) && last_b32));
    out_binary32_ =
        p_.out.family == Family::Ieee && p_.out.exp_bits == 8 && p_.out.man_bits == 23 && p_.out.subnormals;
    out_ieee_ = !is_stochastic(p_.out) && fast_ieee_d_supported(p_.out);
    if (out_ieee_) out_params_ = fast_ieee_d_params(p_.out);
    out_f32_ = out_ieee_ && fast_ieee_rne_f32_supported(p_.out);
    if (out_f32_) out_f32_params_ = fast_ieee_rne_f32_params(p_.out);
  }

  bool chunked() const { return chunked_; }
  // Whether finish() of a binary32 accumulator value is the value itself, plus the bias in one
  // binary32 addition where there is one, with NaNs made the canonical one: what the store loop
  // then does without calling finish() per output.
  bool native_finish() const { return !chunked_ && out_identity_ && (!pb_.out.bias || bias_fp32_); }
  // Whether finish() of a finite binary64 value is its conversion to binary32 (no chunks, no bias,
  // out plain fp32: the conversion rounds to nearest even, subnormals and overflow to Inf included).
  bool converting_finish() const { return !chunked_ && !pb_.out.bias && is_plain_fp32(p_.out); }

  // Whether finish() of a binary32 accumulator value is out's rounding by fast_ieee_d, after the
  // bias in one binary32 addition where there is one: what round_out() does for a row of them.
  bool rounding_finish() const {
    return !chunked_ && !out_identity_ && (!pb_.out.bias || bias_fp32_) && out_ieee_;
  }
  // y[l] = fast_ieee_d(out, x[l]) for l < n, binary64 lanes at a time (rounding_finish()); the
  // same bits by fast_ieee_rne_f32 on binary32 lanes where out is RNE within binary32's range
  // (both equal round_value on binary32 inputs): e6m6 outputs, about 9% of an e6m6 ResNet-18
  // step in the binary64 form.
  void round_out(const float* x, int64_t n, float* y) const {
    if (out_f32_) {
      int64_t l = 0;
      for (; l + kLanes <= n; l += kLanes)
        store_lanes(y + l, fast_ieee_rne_f32(out_f32_params_, load_lanes<VF>(x + l)));
      for (; l < n; ++l) y[l] = fast_ieee_rne_f32(out_f32_params_, x[l]);
      return;
    }
    const bool fast = visit_fast_mode(out_params_.mode, [&](auto mode) {
      constexpr int L = kHalfLanes;  // binary64 lanes
      for (int64_t l = 0; l < n; l += L) {
        const int64_t m = std::min<int64_t>(L, n - l);
        VD v = {};
        for (int64_t q = 0; q < m; ++q) v[q] = x[l + q];
        v = fast_ieee_d<decltype(mode)::value>(out_params_, v);
        for (int64_t q = 0; q < m; ++q) y[l + q] = static_cast<float>(v[q]);
      }
    });
    if (!fast)
      for (int64_t l = 0; l < n; ++l) y[l] = static_cast<float>(round_value(p_.out, x[l], 0));
  }

  // outer <- R_outer(outer + acc) for chunk c of output o.
  double promote(double outer, double acc, uint64_t o, uint64_t c) const {
    if (promote_fp32_) return static_cast<float>(outer) + static_cast<float>(acc);
    const uint32_t r = is_stochastic(p_.acc_outer) ? draw(o, tail_ + c) : 0;
    return add_into(p_.acc_outer, outer, acc, r);
  }

  // The output o from its final accumulator value v, bias element b (or null).
  float finish(double v, const float* b, uint64_t o) const {
    if (b) {
      if (bias_fp32_) {
        v = static_cast<float>(v) + *b;
      } else {
        const uint32_t r = is_stochastic(last_) ? draw(o, tail_ + chunks_) : 0;
        v = add_into(last_, v, *b, r);
      }
    }
    if (out_identity_) return is_nan(v) ? static_cast<float>(quiet_nan()) : static_cast<float>(v);
    // A finite binary32 value is its own rounding into binary32 in every mode.
    if (out_binary32_ && static_cast<double>(static_cast<float>(v)) == v &&
        std::fabs(v) <= 3.4028234663852886e38)
      return static_cast<float>(v);
    if (out_ieee_) return static_cast<float>(round_out_ieee(v));
    const uint32_t r = is_stochastic(p_.out) ? draw(o, tail_ + chunks_ + 1) : 0;
    return static_cast<float>(round_value(p_.out, v, r));
  }

 private:
  uint32_t draw(uint64_t o, uint64_t site) const {
    return philox_draw(pb_.draws.seed, pb_.draws.stream, o * pb_.sites + site);
  }
  double round_out_ieee(double v) const {
    double r = 0.0;
    if (visit_fast_mode(out_params_.mode,
                        [&](auto mode) { r = fast_ieee_d<decltype(mode)::value>(out_params_, v); }))
      return r;
    return round_value(p_.out, v, 0);
  }

  const Problem& pb_;
  const MacPolicy& p_;
  bool chunked_ = false;
  uint64_t chunks_ = 1, tail_ = 0;
  Format last_;
  bool promote_fp32_ = false, bias_fp32_ = false, out_identity_ = false, out_binary32_ = false,
       out_ieee_ = false, out_f32_ = false;
  FastIeeeD out_params_{};
  FastIeeeRneF32 out_f32_params_{};
};

// Threads: every path below hands its tasks to parallel_tasks of the CPU
// thread pool (numerics/parallel_for.h), whose threads take tasks from a shared
// counter, so that a thread slowed down by other processes does not hold the
// others up.

// ---------------------------------------------------------------------------
// The generic path: mac_reduce per output, over a packed transpose of B.

// The operands stored whole: A row-major (M, K) and B transposed (N, K).
void store_operands(const Problem& pb, std::vector<float>* a, std::vector<float>* bt) {
  const int64_t M = pb.M, N = pb.N, K = pb.K;
  std::vector<float> t(static_cast<size_t>(std::max(M, N) * K));
  a->resize(static_cast<size_t>(M * K));
  bt->resize(static_cast<size_t>(N * K));
  pb.A->fill(0, M, 0, K, t.data(), M);  // t[k * M + i] = A(i, k)
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) (*a)[i * K + k] = t[k * M + i];
  pb.B->fill(0, N, 0, K, t.data(), N);  // t[k * N + j] = B(k, j)
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k) (*bt)[j * K + k] = t[k * N + j];
}

void generic_gemm(const Problem& pb, int threads) {
  const int64_t M = pb.M, N = pb.N, K = pb.K;
  const MacPolicy& p = *pb.p;
  if (K == 0 && !pb.out.bias && !is_stochastic(p.out) && !is_stochastic(p.acc_outer) &&
      !is_stochastic(p.acc)) {
    // Every output is the empty sum's value, the same for all without a bias or draws: one
    // mac_reduce and a fill (a 1 x 1 stride-2 grad-input's phases that no tap reaches).
    const float v =
        static_cast<float>(mac_reduce(p, nullptr, nullptr, 0, nullptr, [](uint64_t) { return 0u; }));
    parallel_for(M, threads, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < N; ++j) *pb.c_at(i, j) = v;
    });
    return;
  }
  std::vector<float> a, bt;
  store_operands(pb, &a, &bt);
  const int64_t outputs = M * N, per_task = 64;
  parallel_tasks((outputs + per_task - 1) / per_task, threads, [&](int64_t task) {
    for (int64_t o = task * per_task; o < std::min(outputs, (task + 1) * per_task); ++o) {
      const int64_t i = o / N, j = o % N;
      const uint64_t base = static_cast<uint64_t>(o) * pb.sites;
      auto draw = [&](uint64_t site) { return philox_draw(pb.draws.seed, pb.draws.stream, base + site); };
      const double y = mac_reduce(*pb.p, a.data() + i * K, bt.data() + j * K, K, pb.bias_at(i, j), draw);
      *pb.c_at(i, j) = static_cast<float>(y);
    }
  });
}

// ---------------------------------------------------------------------------
// (f) An approximate multiplier's table with a plain fp32 accumulator and no
// chunks: the products come from approx_mul_lut (values of the table's format,
// so binary32 values or Inf/NaN) and R_fp32(acc + p) is one binary32 addition;
// acc starts at +0 and so is never -0. NaN payloads differ from add_into's, but
// the output rounding makes every NaN the canonical one, as mac_reduce does.

void lut_gemm(const Problem& pb, int threads) {
  const MacPolicy& p = *pb.p;
  const int64_t M = pb.M, N = pb.N, K = pb.K;
  // The operands rounded into the table's format once (approx_mul_lut rounds
  // them first, and R_F is idempotent), B transposed; the raw ones decide
  // which terms are skipped (a nonzero operand may round to 0, and 0 x Inf is NaN).
  std::vector<float> a_raw, bt;
  store_operands(pb, &a_raw, &bt);
  std::vector<float> ar(a_raw.size()), br(bt.size());
  for (size_t x = 0; x < ar.size(); ++x) ar[x] = quantize(p.mul, a_raw[x]);
  for (size_t x = 0; x < br.size(); ++x) br[x] = quantize(p.mul, bt[x]);
  const int64_t outputs = M * N, per_task = 64;
  parallel_tasks((outputs + per_task - 1) / per_task, threads, [&](int64_t task) {
    for (int64_t o = task * per_task; o < std::min(outputs, (task + 1) * per_task); ++o) {
      const int64_t i = o / N, j = o % N;
      const float *a = a_raw.data() + i * K, *b = bt.data() + j * K;
      const float *ra = ar.data() + i * K, *rb = br.data() + j * K;
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        if (a[k] == 0.0f || b[k] == 0.0f) continue;  // zero operands are skipped
        acc = acc + static_cast<float>(approx_mul_lut(p.lut, p.mul, ra[k], rb[k]));
      }
      if (const float* bias = pb.bias_at(i, j)) acc = acc + *bias;
      *pb.c_at(i, j) = static_cast<float>(round_value(p.out, acc));
    }
  });
}

// ---------------------------------------------------------------------------
// The fast-path driver. For each block of NC columns: pack that block of B
// (all K terms, in KC-term blocks cut at chunk ends, NR-column panels), then
// run tasks of (up to RB rows) x (a range of panels): for each k block, for
// each MR rows, pack A and run the micro-kernel over the panels; promote at
// chunk ends; finish the outputs. A task keeps its accumulators between k
// blocks, so each output still sees its terms in order. With a single row task
// (few rows, or all_rows in fast_gemm) no B block is packed ahead: each task
// packs A for all its rows per k block and each B panel just before its tiles.

constexpr int64_t kKC = 256;  // a multiple of every kernel's kKGroup
constexpr int64_t kNC = 512;
constexpr int64_t kRB = 32;                            // rows per task, at most, but for fast_gemm's all_rows
constexpr int64_t kFuseRows = 512, kFuseColumns = 64;  // fast_gemm's all_rows

// Kern::kKGroup if present, else 1: terms per packed element.
template <class K, class = void>
struct KGroup : std::integral_constant<int64_t, 1> {};
template <class K>
struct KGroup<K, std::void_t<decltype(K::kKGroup)>> : std::integral_constant<int64_t, K::kKGroup> {};

// Kernels whose products may be flagged say below which bound they never are.
template <class K, class = void>
struct HasSafeBound : std::false_type {};
template <class K>
struct HasSafeBound<K, std::void_t<decltype(std::declval<const K&>().safe_bound())>> : std::true_type {};

// A thread's staging buffer for operand blocks that the kernel converts while packing, at least n floats.
thread_local std::vector<float> tl_stage_a, tl_stage_b;
float* scratch(std::vector<float>* buf, size_t n) {
  if (buf->size() < n) buf->resize(n);
  return buf->data();
}

// The largest |x| and the smallest nonzero |x| of a block as binary32 bits
// (NaN above Inf; min_nonzero kNoNonzero if all are zeros), in one pass that
// vectorises: the minimum is taken over |x| - 1, which sends zeros to the top.
// Also the OR of the fraction fields, whose trailing zeros bound the
// significant bits of every element (significant_bits).
constexpr uint32_t kNoNonzero = 0xffffffffu;
struct AbsRange {
  uint32_t max = 0, min_nonzero = kNoNonzero, fractions = 0;
};
AbsRange abs_range(const float* x, int64_t rows, int64_t cols, int64_t ld) {
  uint32_t mx = 0, below = 0xffffffffu, fractions = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = x + i * ld;
    for (int64_t j = 0; j < cols; ++j) {
      const uint32_t a = float_bits(row[j]) & 0x7fffffffu;
      mx = std::max(mx, a);
      below = std::min(below, a - 1u);
      fractions |= a;
    }
  }
  return {mx, below == 0xffffffffu ? kNoNonzero : below + 1u, fractions & 0x7fffffu};
}
// An upper bound of the significant bits of each element of a block from
// AbsRange::fractions: 24 less the fraction's trailing zeros common to all (a
// subnormal has one bit fewer than this counts).
int significant_bits(uint32_t fractions) { return fractions == 0 ? 1 : 24 - __builtin_ctz(fractions); }
// The same over a block whose rows are the full ld wide (zero padded): one flat loop.
AbsRange abs_range_flat(const float* x, int64_t n) { return abs_range(x, 1, n, n); }

// Line floors: for each of the `rows` rows of W floats of a packed panel (one step k of the
// micro-kernel), the binary32 exponent field e of its smallest nonzero magnitude, which is then at
// least 2^(e - 127): -22 for a subnormal (2^-149), kNoFloor for a row of zeros (no nonzero
// product). fast_gemm adds A's and B's at each step k of a tile to find the steps where every
// product is at least a kernel's floor (Form::ShortSteps).
constexpr int16_t kNoFloor = 1000;           // two of them and any field still add up to < 2^15
inline int16_t line_floor(uint32_t below) {  // below: the smallest |x| - 1 (zeros went to the top)
  const int16_t field = static_cast<int16_t>((below + 1u) >> 23);
  return below == 0xffffffffu ? kNoFloor : field == 0 ? int16_t{-22} : field;
}
#if defined(__AVX512F__)
// Each lane the minimum of its group of 8 (lanes 0-7, 8-15): three folds.
inline VU min_within_eights(VU m) {
  m = lane_umin(m, __builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
  m = lane_umin(m, __builtin_shufflevector(m, m, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
  return lane_umin(m, __builtin_shufflevector(m, m, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
}
#endif
template <int64_t W>
void line_floors(const float* x, int64_t rows, int16_t* floors) {
  if constexpr (W % kLanes == 0) {  // B's panels: whole vectors per row, then one lane minimum
    for (int64_t q = 0; q < rows; ++q) {
      VU m = splat<VU>(0xffffffffu);
#pragma GCC unroll 4
      for (int64_t v = 0; v < W / kLanes; ++v)
        m = lane_umin(m, (load_lanes<VU>(x + q * W + v * kLanes) & 0x7fffffffu) - 1u);
#if defined(__AVX512F__)  // halves folded onto each other (_mm512_reduce_min_epu32 warns in GCC 12)
      m = min_within_eights(
          lane_umin(m, __builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7)));
      const uint32_t below = m[0];
#else
      uint32_t below = m[0];
      for (int l = 1; l < kLanes; ++l) below = std::min(below, static_cast<uint32_t>(m[l]));
#endif
      floors[q] = line_floor(below);
    }
  } else {
    int64_t q = 0;
#if defined(__AVX512F__)
    if constexpr (W == 8) {  // A's 8-row panels: two rows a vector, folded within their halves
      for (; q + 2 <= rows; q += 2) {
        VU m = (load_lanes<VU>(x + q * W) & 0x7fffffffu) - 1u;
        m = min_within_eights(m);
        floors[q] = line_floor(m[0]);
        floors[q + 1] = line_floor(m[8]);
      }
    }
#endif
    for (; q < rows; ++q) {
      uint32_t below = 0xffffffffu;
      for (int64_t l = 0; l < W; ++l) below = std::min(below, (float_bits(x[q * W + l]) & 0x7fffffffu) - 1u);
      floors[q] = line_floor(below);
    }
  }
}

// One bit per step k of a tile (k < kKC), bit k % 64 of word k / 64 (micro_loop's short_steps).
struct StepBits {
  static_assert(kKC % 64 == 0, "whole words");
  static constexpr int64_t kWords = kKC / 64;
  uint64_t w[kWords] = {};
  // Bit k: bits k and k + s (0 < s < 64; bits from kKC on read as 0).
  StepBits and_up(int s) const {
    StepBits r;
    for (int64_t i = 0; i < kWords; ++i)
      r.w[i] = w[i] & ((w[i] >> s) | (i + 1 < kWords ? w[i + 1] << (64 - s) : 0));
    return r;
  }
  // Bit k: bits k or k - s.
  StepBits or_down(int s) const {
    StepBits r;
    for (int64_t i = 0; i < kWords; ++i) r.w[i] = w[i] | (w[i] << s) | (i > 0 ? w[i - 1] >> (64 - s) : 0);
    return r;
  }
  int64_t count() const {
    int64_t n = 0;
    for (uint64_t x : w) n += __builtin_popcountll(x);
    return n;
  }
};

// Bit k (k < kr <= kKC): fa[k] + fb[k] >= need (line floors of a tile's two panels).
inline StepBits floor_steps(const int16_t* fa, const int16_t* fb, int64_t kr, int need) {
  StepBits ok;
  int64_t k = 0;
#if defined(__AVX512BW__)
  // 32 steps a compare: one bit each (a scalar loop took ~8% of ResNet-18's e6m6 steps).
  const __m512i n = _mm512_set1_epi16(static_cast<int16_t>(need));
  for (; k + 32 <= kr; k += 32) {
    const __m512i sum = _mm512_add_epi16(_mm512_loadu_si512(fa + k), _mm512_loadu_si512(fb + k));
    ok.w[k / 64] |= static_cast<uint64_t>(_mm512_cmpge_epi16_mask(sum, n)) << (k % 64);
  }
#endif
  for (; k < kr; ++k) ok.w[k / 64] |= static_cast<uint64_t>(fa[k] + fb[k] >= need) << (k % 64);
  return ok;
}

// An upper bound of |a b| from the operands' largest magnitudes (AbsRange::max); Inf if either may be Inf or
// NaN.
double product_bound(uint32_t a, uint32_t b) {
  if (a >= 0x7f800000u || b >= 0x7f800000u) return HUGE_VAL;
  return static_cast<double>(bits_float(a)) * static_cast<double>(bits_float(b));
}

// A lower bound of the nonzero |a b| from the operands' AbsRange::min_nonzero (exact:
// two binary32 significands fit a binary64 one); Inf if either operand has no nonzero.
double product_floor(uint32_t a, uint32_t b) {
  if (a == kNoNonzero || b == kNoNonzero) return HUGE_VAL;
  return static_cast<double>(bits_float(a)) * static_cast<double>(bits_float(b));
}

// The address of outputs (i, jb .. jb + w - 1) where they are consecutive in memory (no
// column-offset table, or offsets that run on: they increase, so equal ends mean a run), else null.
float* output_run(const GemmOutput& o, int64_t i, int64_t jb, int64_t w) {
  if (o.col_offset && o.col_offset[jb + w - 1] - o.col_offset[jb] != w - 1) return nullptr;
  return o.C + i * o.ldc + (o.col_offset ? o.col_offset[jb] : jb);
}

// Epilogue::native_finish for w outputs (i, jb .. jb + w - 1) whose addresses run on
// (no column-offset table, or a convolution's run of one image's pixels): loops
// that vectorise, the bits of the per-output loop (acc, plus the bias when
// there is one, NaN made canonical). Returns false for scattered outputs.
bool native_finish_run(const GemmOutput& o, const float* acc, int64_t i, int64_t jb, int64_t w) {
  float* dst = output_run(o, i, jb, w);
  if (!dst) return false;
  auto canonical = [](float v) { return v != v ? static_cast<float>(quiet_nan()) : v; };
  if (!o.bias) {
    for (int64_t l = 0; l < w; ++l) dst[l] = canonical(acc[l]);
  } else if (o.bias_per_row) {
    const float b = o.bias[i];
    for (int64_t l = 0; l < w; ++l) dst[l] = canonical(acc[l] + b);
  } else {
    const float* b = o.bias + jb;
    for (int64_t l = 0; l < w; ++l) dst[l] = canonical(acc[l] + b[l]);
  }
  return true;
}

// The column step of transposed outputs: ldc 1 and column offsets that step by a constant of at
// least 8 (grad-weight's (taps, C_out) GEMM, which writes gw (C_out, taps): output (i, j) at
// C[i + j * step]); 0 for other layouts.
int64_t transposed_step(const GemmOutput& o, int64_t N) {
  if (o.ldc != 1 || !o.col_offset || N < 2) return 0;
  const int64_t step = o.col_offset[1] - o.col_offset[0];
  if (step < 8) return 0;
  for (int64_t j = 2; j < N; ++j)
    if (o.col_offset[j] - o.col_offset[j - 1] != step) return 0;
  return step;
}

// A finished h x w tile of outputs (rows r0 .., columns jb ..; tile[r * ld + l], ld >= 8) stored into
// transposed outputs (transposed_step): whole 8 x 8 blocks by transpose_8x8, a run of 8 outputs per
// column, the edges one output at a time. One scalar store per output, each into another line, had
// been about 4% of a ResNet-18 training step.
void store_transposed(const GemmOutput& o, int64_t step, const float* tile, int64_t ld, int64_t r0, int64_t h,
                      int64_t jb, int64_t w) {
  float* base = o.C + r0 + o.col_offset[jb];  // output (r0 + r, jb + l) at base[r + l * step]
  const int64_t h8 = h / 8 * 8, w8 = w / 8 * 8;
  for (int64_t r = 0; r < h8; r += 8)
    for (int64_t l = 0; l < w8; l += 8)
      cpu_copy::transpose_8x8(tile + r * ld + l, ld, base + r + l * step, step);
  for (int64_t r = 0; r < h; ++r)
    for (int64_t l = r < h8 ? w8 : 0; l < w; ++l) base[r + l * step] = tile[r * ld + l];
}

// nonfinite (the fp32 kernels, without chunks): set when some accumulator ends Inf or NaN, which every
// output that a non-finite operand reaches does (run_gemm then checks the operands).
template <class Kern>
void fast_gemm(const Kern& kern, const Problem& pb, int threads, bool acc_binary32,
               std::atomic<bool>* nonfinite = nullptr) {
  using AElem = typename Kern::AElem;
  using BElem = typename Kern::BElem;
  using Acc = typename Kern::Acc;
  constexpr int64_t MR = Kern::MR, NR = Kern::NR, G = KGroup<Kern>::value;
  // The posit kernel's poison form needs the operands' bounds as well.
  constexpr bool kPoisonPath = HasPoisonPath<Kern>::value;
  constexpr bool kBounded = HasSafeBound<Kern>::value || kPoisonPath;
  // Kernels with a normal path (gemm_kernels.h micro_loop) also need the smallest nonzero operands.
  constexpr bool kNormalPath = kBounded && HasNormalPath<Kern>::value;
  constexpr bool kFloor = kNormalPath || kPoisonPath;
  // ... and the short path the operands' significant bits.
  constexpr bool kShortPath = kNormalPath && HasShortPath<Kern>::value;
  constexpr bool kShortSubPath = kShortPath && HasShortSubPath<Kern>::value;
  // Kernels with binary32 operands take them as they are: the operands fill the packed panels.
  constexpr bool kIdentityPack = std::is_same_v<AElem, float> && std::is_same_v<BElem, float> && G == 1;
  // ... and the coarse form (Form::Coarse) where the mul format allows it: a coarse copy beside each
  // packed panel of operands too long for the short form (2 bits > short_bits: the short form
  // serves any pair of shorter ones), for the tiles that pass normal_ok.
  constexpr bool kCoarsePath = kShortPath && kIdentityPack && HasCoarsePath<Kern>::value;
  bool coarse = false;
  if constexpr (kCoarsePath) coarse = kern.coarse_format();
  [[maybe_unused]] auto wants_coarse = [&](int bits) {
    if constexpr (kCoarsePath) return coarse && 2 * bits > kern.short_bits();
    return false;
  };
  const Epilogue ep(pb, acc_binary32);
  const MacPolicy& p = *pb.p;
  const int64_t M = pb.M, N = pb.N, K = pb.K;
  const int64_t out_step = pb.out.bias ? 0 : transposed_step(pb.out, N);  // (no bias: grad-weight's case)

  // k blocks [kb[b], kb[b+1]) and the packed rows (groups of G terms) before each.
  std::vector<int64_t> kb{0}, rows_before{0};
  while (kb.back() < K) {
    const int64_t k0 = kb.back();
    int64_t k1 = std::min(K, k0 + kKC);
    if (p.chunk > 0) k1 = std::min(k1, (k0 / p.chunk + 1) * p.chunk);
    kb.push_back(k1);
    rows_before.push_back(rows_before.back() + (k1 - k0 + G - 1) / G);
  }
  const int64_t blocks = static_cast<int64_t>(kb.size()) - 1;
  const int64_t panels_max = (std::min(kNC, N) + NR - 1) / NR;

  // Tasks: row blocks of RB rows (a multiple of MR); ranges of panels as well
  // when there are too few row blocks to keep the threads busy.
  const int64_t rb_max = std::max<int64_t>(MR, kRB / MR * MR);  // MR = 6 (AVX2): 30, not 32
  // Up to kFuseRows rows, when the column blocks give every thread at least two ranges of
  // kFuseColumns columns: one row task over all rows, whose A block (all rows, one k block) stays in
  // L2 while each B panel is packed into L1 just before its tiles (fuse_b below), instead of row
  // tasks that each stream the shared B block from L3. ResNet-18's 64-channel convolutions at 32 x 32
  // (M 64, N 32768, K 576: four row tasks, a 1.2 MB B block per column block) went 19-20 -> 12.8-13.4
  // ms forward on two Zen 5 cores. Each range packs A again, hence the columns per range: a 1 x 1
  // grad-weight (A = the im2col by tap, 128 columns) was slower fused.
  const bool all_rows = M <= kFuseRows && std::min(N, kNC) >= 2 * threads * kFuseColumns;
  const int64_t rb =
      all_rows ? (M + MR - 1) / MR * MR
               : std::min(rb_max, std::max<int64_t>(MR, (M + 4 * threads - 1) / (4 * threads) / MR * MR));
  const int64_t row_tasks = (M + rb - 1) / rb;
  // With one row task each B panel feeds one task only: it packs the panel
  // itself just before its micro-kernels, into a buffer that stays in L1,
  // instead of all panels of a column block first (LeNet-5's 6-row
  // convolutions wrote and read back 800 KB per column block that way: their
  // fills were the largest share of the fp32 step).
  const bool fuse_b = row_tasks == 1;
  // Otherwise all panels of a column block, packed before the row tasks run, with their bounds.
  const int64_t shared_panels = fuse_b ? 0 : panels_max;
  UninitBuffer<BElem> bpack(static_cast<size_t>(rows_before.back() * shared_panels * NR));  // written in full
  UninitBuffer<uint32_t> bmax(static_cast<size_t>(blocks * shared_panels));
  UninitBuffer<uint32_t> bmin(static_cast<size_t>(kFloor ? blocks * shared_panels : 0));
  UninitBuffer<int> bbits(static_cast<size_t>(kShortPath ? blocks * shared_panels : 0));
  UninitBuffer<int16_t> bfloors(static_cast<size_t>(kShortSubPath ? rows_before.back() * shared_panels : 0));
  UninitBuffer<float> bcoarse(coarse ? bpack.size() : 0);  // where wants_coarse(the panel's bits)

  // An operand block's bounds, for the kernels' cheaper forms.
  struct Bounds {
    uint32_t max = 0, min = kNoNonzero;
    int bits = 24;
    const int16_t* floors = nullptr;  // line_floors of the packed lines, where pack_lines wrote them
    const float* coarse = nullptr;    // their coarse copies, where pack_lines wrote them
  };
  auto bounds_of = [](const AbsRange& range) {
    Bounds bd;
    bd.max = range.max;
    if constexpr (kFloor) bd.min = range.min_nonzero;
    if constexpr (kShortPath) bd.bits = significant_bits(range.fractions);
    return bd;
  };
  // Short operands whose bounds leave normal_ok's floor unproven (one tiny activation or gradient in
  // either panel does that): the steps k at which the line floors prove it run Form::Short, the
  // others Form::ShortSub, in one micro-kernel call (Form::ShortSteps). Runs of fewer than 8 such
  // steps go with their neighbours to ShortSub, so that the kernel's branch between the two
  // predicts. In ResNet-18's e6m6 steps about half the steps of such tiles proved the floor.
  [[maybe_unused]] auto short_by_steps = [&](const AElem* ap, const int16_t* fa, const BElem* bp,
                                             const int16_t* fb, int64_t kr, Acc* c) {
    if constexpr (kShortSubPath) {
      const StepBits ok = floor_steps(fa, fb, kr, kern.floor_fields());
      const int64_t proven = ok.count();
      if (proven == kr) return kern.template micro_form<Form::Short>(ap, bp, kr, c);
      if (proven == 0) return kern.template micro_form<Form::ShortSub>(ap, bp, kr, c);
      const StepBits starts = ok.and_up(1).and_up(2).and_up(4);       // k: steps k .. k + 7 all prove it
      const StepBits runs = starts.or_down(1).or_down(2).or_down(4);  // the steps of such runs
      kern.template micro_form<Form::ShortSteps>(ap, bp, kr, c, runs.w);
    }
  };
  // The micro-kernel of one tile in the cheapest form its operands' bounds allow.
  auto run_tile = [&](const AElem* ap, const Bounds& ab, const BElem* bp, const Bounds& bb, int64_t kr,
                      Acc* c) {
    if constexpr (kPoisonPath) {
      if (kern.poison_ok(product_bound(ab.max, bb.max), product_floor(ab.min, bb.min)) &&
          kern.micro_poison(ap, bp, kr, c))
        return;
    } else if constexpr (kBounded) {
      // Tiles whose operands bound every product below the flag threshold skip the flag tests.
      if (product_bound(ab.max, bb.max) < kern.safe_bound()) {
        if constexpr (kNormalPath) {
          if (kern.normal_ok(product_floor(ab.min, bb.min), bb.max)) {
            if constexpr (kShortPath) {
              if (ab.bits + bb.bits <= kern.short_bits()) {
                kern.template micro_form<Form::Short>(ap, bp, kr, c);
                return;
              }
            }
            if constexpr (kCoarsePath) {
              if (ab.coarse && bb.coarse && kern.coarse_ok(ab.max)) {
                kern.micro_coarse(ap, bp, CoarsePanels<AElem, BElem>{ab.coarse, bb.coarse}, kr, c);
                return;
              }
            }
            kern.template micro_form<Form::Normal>(ap, bp, kr, c);
            return;
          }
        }
        if constexpr (kShortSubPath) {  // short operands, products below 2^emin
          if (ab.bits + bb.bits <= kern.short_bits() && kern.sub_ok(bb.max)) {
            if (ab.floors && bb.floors) {
              short_by_steps(ap, ab.floors, bp, bb.floors, kr, c);
            } else {
              kern.template micro_form<Form::ShortSub>(ap, bp, kr, c);
            }
            return;
          }
        }
        kern.template micro<false>(ap, bp, kr, c);
        return;
      }
    }
    kern.template micro<true>(ap, bp, kr, c);
  };
  // n lines from x0 of k block b packed into dst (lines past the matrix: zeros), and their bounds:
  // rows of A MR wide (side std::true_type) or columns of B NR wide (std::false_type). With
  // kShortSubPath, the line floors of short lines into `floors` (kKC entries) as well; with
  // kCoarsePath, where wants_coarse, the coarse copies into `coarse_dst` (laid out as dst).
  static_assert(!kShortSubPath || kIdentityPack, "line floors are taken of binary32 panels");
  auto pack_lines = [&](auto side, int64_t b, int64_t x0, int64_t n, auto* dst,
                        [[maybe_unused]] int16_t* floors, [[maybe_unused]] float* coarse_dst) {
    constexpr bool kA = decltype(side)::value;
    constexpr int64_t W = kA ? MR : NR;
    const GemmOperand& op = kA ? *pb.A : *pb.B;
    const int64_t k0 = kb[b], kc = kb[b + 1] - k0, kr = rows_before[b + 1] - rows_before[b];
    Bounds bd;
    if constexpr (kIdentityPack) {  // the operand writes the lines itself
      op.fill(x0, n, k0, kc, dst, W);
      if (n < W)
        for (int64_t q = 0; q < kc; ++q) std::fill(dst + q * W + n, dst + (q + 1) * W, 0.0f);
      if constexpr (kBounded) bd = bounds_of(abs_range_flat(dst, kc * W));  // the padding lines are zeros
      if constexpr (kShortSubPath) {
        if (bd.bits < kern.short_bits()) {
          line_floors<W>(dst, kc, floors);
          bd.floors = floors;
        }
      }
      if constexpr (kCoarsePath) {
        if (wants_coarse(bd.bits)) {
          for (int64_t i = 0; i < kc * W; ++i)
            coarse_dst[i] = kA ? kern.coarse_a(dst[i]) : kern.coarse_b(dst[i]);
          bd.coarse = coarse_dst;
        }
      }
    } else {
      float* stage = scratch(kA ? &tl_stage_a : &tl_stage_b, static_cast<size_t>((kc + 1) * W));
      op.fill(x0, n, k0, kc, stage, W);
      if constexpr (kBounded) bd = bounds_of(abs_range(stage, kc, n, W));
      if constexpr (G == 1) {
        auto pack_one = [&](float x) {
          if constexpr (kA) {
            return kern.pack_a(x);
          } else {
            return kern.pack_b(x);
          }
        };
        for (int64_t q = 0; q < kr; ++q) {
          for (int64_t l = 0; l < n; ++l) dst[q * W + l] = pack_one(stage[q * W + l]);
          for (int64_t l = n; l < W; ++l) dst[q * W + l] = {};
        }
      } else if constexpr (kA) {  // pairs of terms, the last one padded with a zero term
        kern.pack_a_block(stage, kc, n, dst);
      } else {
        kern.pack_b_block(stage, kc, n, dst);
      }
    }
    return bd;
  };
  auto pack_a_group = [&](int64_t b, int64_t r0, int64_t h, AElem* dst, int16_t* floors, float* coarse_dst) {
    return pack_lines(std::true_type{}, b, r0, h, dst, floors, coarse_dst);
  };
  auto pack_b_panel = [&](int64_t b, int64_t j0, int64_t w, BElem* dst, int16_t* floors, float* coarse_dst) {
    return pack_lines(std::false_type{}, b, j0, w, dst, floors, coarse_dst);
  };

  for (int64_t jc = 0; jc < N; jc += kNC) {
    const int64_t nc = std::min(kNC, N - jc);
    const int64_t panels = (nc + NR - 1) / NR;
    auto packed_row = [&](int64_t b, int64_t panel) {  // the panel's first packed row
      return rows_before[b] * panels + panel * (rows_before[b + 1] - rows_before[b]);
    };
    auto packed_b = [&](int64_t b, int64_t panel) { return bpack.data() + packed_row(b, panel) * NR; };
    auto b_floors = [&](int64_t b, int64_t panel) {
      return kShortSubPath ? bfloors.data() + packed_row(b, panel) : nullptr;
    };
    auto b_coarse = [&](int64_t b, int64_t panel) {
      return coarse ? bcoarse.data() + packed_row(b, panel) * NR : nullptr;
    };
    if (!fuse_b) {
      parallel_tasks(blocks * panels, threads, [&](int64_t task) {
        const int64_t b = task / panels, panel = task % panels;
        const int64_t j0 = jc + panel * NR;
        const Bounds bd = pack_b_panel(b, j0, std::min(NR, jc + nc - j0), packed_b(b, panel),
                                       b_floors(b, panel), b_coarse(b, panel));
        bmax[b * panels + panel] = bd.max;
        if constexpr (kFloor) bmin[b * panels + panel] = bd.min;
        if constexpr (kShortPath) bbits[b * panels + panel] = bd.bits;
      });
    }

    const int64_t col_tasks =
        std::min(panels, std::max<int64_t>(1, (2 * threads + row_tasks - 1) / row_tasks));
    parallel_tasks(row_tasks * col_tasks, threads, [&](int64_t task) {
      const int64_t i0 = (task / col_tasks) * rb, i1 = std::min(M, i0 + rb);
      const int64_t ct = task % col_tasks;
      const int64_t p0 = panels * ct / col_tasks, p1 = panels * (ct + 1) / col_tasks;
      const int64_t np = p1 - p0, groups = (i1 - i0 + MR - 1) / MR;
      const int64_t j_first = jc + p0 * NR, j_end = std::min(jc + nc, jc + p1 * NR);
      const int64_t a_stride = (kKC / G + 1) * MR;
      // Fused: every group's A of the block at once, and one B panel at a time.
      UninitBuffer<AElem> apack(static_cast<size_t>((fuse_b ? groups : 1) * a_stride));
      UninitBuffer<BElem> bpanel(static_cast<size_t>(fuse_b ? (kKC / G + 1) * NR : 0));
      // Line floors (kShortSubPath): of each group's A as apack holds them, of the fused B panel.
      UninitBuffer<int16_t> afloors(static_cast<size_t>(kShortSubPath ? (fuse_b ? groups : 1) * kKC : 0));
      UninitBuffer<int16_t> bpanel_floors(static_cast<size_t>(kShortSubPath && fuse_b ? kKC : 0));
      // Coarse copies (kCoarsePath): of each group's A, of the fused B panel.
      UninitBuffer<float> acoarse(coarse ? apack.size() : 0);
      UninitBuffer<float> bpanel_coarse(coarse ? bpanel.size() : 0);
      std::vector<Bounds> abounds(static_cast<size_t>(groups));
      std::vector<Acc> acc(static_cast<size_t>(groups * np * MR * NR), Acc{});
      std::vector<double> outer(ep.chunked() ? acc.size() : 0, 0.0);
      auto at = [&](int64_t i, int64_t j) {  // accumulator of output (i, j)
        const int64_t g = (i - i0) / MR, r = (i - i0) % MR, panel = (j - j_first) / NR,
                      l = (j - j_first) % NR;
        return static_cast<size_t>(((g * np + panel) * MR + r) * NR + l);
      };
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t k1 = kb[b + 1], kr = rows_before[b + 1] - rows_before[b];
        auto tile = [&](int64_t g, int64_t panel) { return acc.data() + ((g * np + panel - p0) * MR) * NR; };
        if (!fuse_b) {
          for (int64_t g = 0; g < groups; ++g) {
            const int64_t r0 = i0 + g * MR;
            const Bounds ab =
                pack_a_group(b, r0, std::min(MR, i1 - r0), apack.data(), afloors.data(), acoarse.data());
            for (int64_t panel = p0; panel < p1; ++panel) {
              Bounds bb;
              bb.max = bmax[b * panels + panel];
              if constexpr (kFloor) bb.min = bmin[b * panels + panel];
              if constexpr (kShortPath) bb.bits = bbits[b * panels + panel];
              if constexpr (kShortSubPath) {  // pack_lines wrote them for short panels
                if (bb.bits < kern.short_bits()) bb.floors = b_floors(b, panel);
              }
              if (wants_coarse(bb.bits)) bb.coarse = b_coarse(b, panel);  // and these for long ones
              run_tile(apack.data(), ab, packed_b(b, panel), bb, kr, tile(g, panel));
            }
          }
        } else {
          for (int64_t g = 0; g < groups; ++g) {
            const int64_t r0 = i0 + g * MR;
            abounds[g] = pack_a_group(b, r0, std::min(MR, i1 - r0), apack.data() + g * a_stride,
                                      afloors.data() + (kShortSubPath ? g * kKC : 0),
                                      acoarse.data() + (coarse ? g * a_stride : 0));
          }
          for (int64_t panel = p0; panel < p1; ++panel) {
            const int64_t j0 = jc + panel * NR;
            const Bounds bb = pack_b_panel(b, j0, std::min(NR, jc + nc - j0), bpanel.data(),
                                           bpanel_floors.data(), bpanel_coarse.data());
            for (int64_t g = 0; g < groups; ++g)
              run_tile(apack.data() + g * a_stride, abounds[g], bpanel.data(), bb, kr, tile(g, panel));
          }
        }
        if (p.chunk > 0 && (k1 % p.chunk == 0 || k1 == K)) {
          const uint64_t chunk = static_cast<uint64_t>((k1 - 1) / p.chunk);
          for (int64_t i = i0; i < i1; ++i) {
            for (int64_t j = j_first; j < j_end; ++j) {
              const size_t x = at(i, j);
              outer[x] =
                  ep.promote(outer[x], kern.acc_value(acc[x]), static_cast<uint64_t>(i * N + j), chunk);
              acc[x] = Acc{};
            }
          }
        }
      }
      if (nonfinite) {
        uint32_t top = 0;  // the largest exponent field (a flat loop over the tiles, padding included)
        for (const Acc& x : acc) top = std::max(top, float_bits(x) & 0x7f800000u);
        if (top == 0x7f800000u) nonfinite->store(true, std::memory_order_relaxed);
      }
      // The outputs row by row, panel by panel (no index arithmetic per output): visit(i, x0, jb, w)
      // for the accumulators x0 .. x0 + w - 1 of row i, which are outputs (i, jb .. jb + w - 1).
      auto each_row_panel = [&](auto&& visit) {
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t g = (i - i0) / MR, r = (i - i0) % MR;
          for (int64_t panel = p0; panel < p1; ++panel) {
            const int64_t jb = jc + panel * NR;
            visit(i, static_cast<size_t>(((g * np + panel - p0) * MR + r) * NR), jb,
                  std::min(NR, j_end - jb));
          }
        }
      };
      const GemmOutput& o = pb.out;
      auto bias_of = [&](int64_t i, int64_t j) { return o.bias_per_row ? o.bias[i] : o.bias[j]; };
      if constexpr (std::is_same_v<Acc, float>) {
        // Transposed outputs (out_step): tile by tile, each finished in place and stored by
        // store_transposed.
        auto each_tile = [&](auto&& finish_row) {
          for (int64_t g = 0; g < groups; ++g) {
            const int64_t r0 = i0 + g * MR, h = std::min(MR, i1 - r0);
            for (int64_t panel = p0; panel < p1; ++panel) {
              const int64_t jb = jc + panel * NR, w = std::min(NR, j_end - jb);
              float* t = acc.data() + ((g * np + panel - p0) * MR) * NR;
              for (int64_t r = 0; r < h; ++r) finish_row(t + r * NR, w);
              store_transposed(o, out_step, t, NR, r0, h, jb, w);
            }
          }
        };
        if (out_step && ep.native_finish()) {  // no bias (out_step): acc, NaN made canonical
          each_tile([](float* row, int64_t w) {
            for (int64_t l = 0; l < w; ++l)
              row[l] = row[l] != row[l] ? static_cast<float>(quiet_nan()) : row[l];
          });
          return;
        }
        if (out_step && ep.rounding_finish()) {
          each_tile([&](float* row, int64_t w) { ep.round_out(row, w, row); });
          return;
        }
        if (ep.native_finish()) {
          each_row_panel([&](int64_t i, size_t x0, int64_t jb, int64_t w) {
            if (native_finish_run(o, acc.data() + x0, i, jb, w)) return;
            for (int64_t l = 0; l < w; ++l) {
              float v = acc[x0 + l];
              if (o.bias) v = v + bias_of(i, jb + l);
              *pb.c_at(i, jb + l) = v != v ? static_cast<float>(quiet_nan()) : v;
            }
          });
          return;
        }
        if (ep.rounding_finish()) {  // out's rounding a vector at a time
          each_row_panel([&](int64_t i, size_t x0, int64_t jb, int64_t w) {
            float sum[NR], rounded[NR];
            const float* src = acc.data() + x0;
            if (o.bias) {
              for (int64_t l = 0; l < w; ++l) sum[l] = src[l] + bias_of(i, jb + l);
              src = sum;
            }
            if (float* dst = output_run(o, i, jb, w)) {  // a run: in place
              ep.round_out(src, w, dst);
              return;
            }
            ep.round_out(src, w, rounded);
            for (int64_t l = 0; l < w; ++l) *pb.c_at(i, jb + l) = rounded[l];
          });
          return;
        }
      }
      if constexpr (std::is_same_v<Acc, int32_t>) {
        if (ep.converting_finish()) {  // acc_value is exact (|acc| < 2^31 times a power of two)
          each_row_panel([&](int64_t i, size_t x0, int64_t jb, int64_t w) {
            for (int64_t l = 0; l < w; ++l)
              *pb.c_at(i, jb + l) = static_cast<float>(kern.acc_value(acc[x0 + l]));
          });
          return;
        }
      }
      each_row_panel([&](int64_t i, size_t x0, int64_t jb, int64_t w) {
        for (int64_t l = 0; l < w; ++l) {
          const double v = ep.chunked() ? outer[x0 + l] : kern.acc_value(acc[x0 + l]);
          *pb.c_at(i, jb + l) = ep.finish(v, pb.bias_at(i, jb + l), static_cast<uint64_t>(i * N + jb + l));
        }
      });
    });
  }
}

// ---------------------------------------------------------------------------
// Choosing a path

bool mul_is(const MacPolicy& p, bool (*pred)(const Format&)) { return !p.mul_exact && pred(p.mul); }

// (d): integer operands. Fills the kernel when the data qualify.
bool int_path(const Problem& pb, KernInt* kern) {
  const MacPolicy& p = *pb.p;
  const Format& acc = p.acc;
  if (acc.family != Family::Fixed || acc.nbits > 53) return false;
  int fa = 0, fb = 0;
  double ma = 0, mb = 0;
  if (!gemm_integer_scan(pb.A->values(), &fa, &ma) || !gemm_integer_scan(pb.B->values(), &fb, &mb))
    return false;
  const int shift = acc.frac_bits - fa - fb;
  if (shift < 0 || shift > 30) return false;  // products would be rounded by the accumulator
  const double max_prod = ma * mb;            // |ia ib| <= 2^30
  if (!p.mul_exact) {
    // The product format must hold every ia ib 2^-(fa+fb) exactly.
    const Format& m = p.mul;
    if (m.family == Family::Fixed) {
      if (m.frac_bits < fa + fb ||
          std::ldexp(max_prod, m.frac_bits - fa - fb) > std::ldexp(1.0, m.nbits - 1) - 1)
        return false;
    } else if (m.family == Family::Ieee) {
      if (max_prod >= std::ldexp(1.0, m.man_bits + 1) || std::ldexp(max_prod, -(fa + fb)) > m.max_finite)
        return false;
      const double lsb = std::ldexp(1.0, -(fa + fb));
      if (m.subnormals ? lsb < m.min_positive : lsb < m.min_normal) return false;
    } else {
      return false;
    }
  }
  // No partial sum, in any order, may leave the accumulator's range or an int32.
  const int64_t run = p.chunk > 0 ? std::min<int64_t>(p.chunk, pb.K) : pb.K;
  const double bound = static_cast<double>(run) * max_prod;
  if (std::ldexp(bound, shift) > std::ldexp(1.0, acc.nbits - 1) - 1 || bound > 2147483647.0) return false;
  kern->a_scale = std::ldexp(1.0f, fa);
  kern->b_scale = std::ldexp(1.0f, fb);
  kern->acc_unit = std::ldexp(1.0, -(fa + fb));
  return true;
}

// The fp32 tile: the tall one unless it would pad at least an eighth more rows
// than the short one (M = 6: 16 rows for 6 against 8; M = 64, 120, 512: tall).
void run_fp32(const Problem& pb, int threads, std::atomic<bool>* nonfinite) {
  if constexpr (kFp32TallMR != kFp32MR) {
    auto padded = [&](int64_t mr) { return (pb.M + mr - 1) / mr * mr; };
    if (8 * padded(kFp32TallMR) < 9 * padded(kFp32MR)) {
      fast_gemm(KernFp32<kFp32TallMR>{}, pb, threads, true, nonfinite);
      return;
    }
  }
  fast_gemm(KernFp32<>{}, pb, threads, true, nonfinite);
}

void run_mul_fma(const Problem& pb, int threads) {
  KernMulF32<ProductF32> kern;
  kern.p = *pb.p;
  kern.prod.pm = fast_ieee_rne_f_params(pb.p->mul);
  fast_gemm(kern, pb, threads, true);
}

// bfloat16's grid: 8 exponent bits, 7 fraction bits, binary32's exponent range.
[[maybe_unused]] bool is_bf16_grid(const Format& f) {
  return f.family == Family::Ieee && f.exp_bits == 8 && f.man_bits == 7 && f.emin == -126 &&
         f.max_finite == 0x1.fep127;
}

template <class Kern>
void run_acc_ieee_with(Kern kern, const Problem& pb, int threads) {
  kern.p = *pb.p;
  kern.prod.pm = fast_ieee_rne_f_params(pb.p->mul);
  kern.pa = fast_ieee_rne_f32_params(pb.p->acc);
  fast_gemm(kern, pb, threads, true);
}

template <int kAccWide>
void run_acc_ieee(const Problem& pb, int threads) {
#if defined(EMU_GEMM_BF16_CONVERT)
  // bf16 products into bf16 (the path's other conditions: RNE, subnormals, Inf and NaN).
  if constexpr (kAccWide == 1) {
    if (is_bf16_grid(pb.p->mul) && is_bf16_grid(pb.p->acc)) {
      run_acc_ieee_with(KernBf16{}, pb, threads);
      return;
    }
  }
#endif
  run_acc_ieee_with(KernAccIeee<ProductF32, kAccWide>{}, pb, threads);
}

template <Rounding Mode>
void run_mul_ieee(const Problem& pb, int threads) {
  KernMulIeee<Mode> kern;
  kern.pm = fast_ieee_d_params(pb.p->mul);
  fast_gemm(kern, pb, threads, true);
}

}  // namespace

const char* gemm_path_name(GemmPath path) {
  switch (path) {
    case GemmPath::Generic:
      return "generic";
    case GemmPath::Fp32:
      return "fp32";
    case GemmPath::MulFmaF32:
      return "mul-fma/fp32";
    case GemmPath::MulRneF32:
      return "mul-rne/fp32";
    case GemmPath::MulIeeeF32:
      return "mul-ieee/fp32";
    case GemmPath::AccIeee:
      return "acc-ieee";
    case GemmPath::Int:
      return "int";
    case GemmPath::Posit:
      return "posit";
    case GemmPath::Lut:
      return "lut/fp32";
    case GemmPath::Split:
      return "split/fp32";
  }
  return "?";
}

const char* gemm_kernel_isa() {
#if defined(__AVX512F__)
#define EMU_GEMM_VECTORS "AVX-512 (512-bit vectors)"
#elif defined(__AVX2__) && defined(__FMA__)
#define EMU_GEMM_VECTORS "AVX2 + FMA (256-bit vectors)"
#else
#define EMU_GEMM_VECTORS "no AVX2 (vector extensions split by the compiler)"
#endif
  return EMU_GEMM_VECTORS "; int8: " EMU_GEMM_INT8_KERNEL "; bf16: " EMU_GEMM_BF16_KERNEL;
#undef EMU_GEMM_VECTORS
}

GemmPath gemm_policy_path(const MacPolicy& p) {
  const Format& acc = p.acc;
  // Fused runs (docs/contract.md section 4.8): an exact sum per run of F terms,
  // rounded once; only mac_step forms them, so no kernel below (nor the split
  // route, which rounds every partial product) gives their bits.
  if (p.fused > 0) return GemmPath::Generic;
  // An approximate multiplier's products come from its table (mac_term): the
  // kernels below do not round products that way; (f) or the generic path runs.
  // A split scheme's partial products (docs/contract.md section 5.6): only mac_term forms them.
  if (!p.mul_exact && p.split != SplitMul::None)
    return split_gemm_applies(p) ? GemmPath::Split : GemmPath::Generic;
  if (!p.mul_exact && has_approx_mul(p.lut))
    return is_plain_fp32(acc) && p.chunk == 0 && !is_stochastic(p.out) ? GemmPath::Lut : GemmPath::Generic;
  if (is_stochastic(acc) || (!p.mul_exact && is_stochastic(p.mul))) {
    // An exact integer accumulation never rounds, so :sr draws do not matter.
    return acc.family == Family::Fixed ? GemmPath::Int : GemmPath::Generic;
  }
  if (is_plain_fp32(acc) && !p.mul_exact) {
    const Format& m = p.mul;
    if (is_plain_fp32(m)) return GemmPath::Fp32;
    if (m.family == Family::Ieee && !m.accumulator_only && m.max_finite <= 3.4028234663852886e38) {
      if (fast_ieee_rne_product_f_supported(m)) return GemmPath::MulFmaF32;
      if (fast_ieee_rne_d_supported(m)) return GemmPath::MulRneF32;
      if (fast_ieee_d_supported(m)) return GemmPath::MulIeeeF32;
    }
  }
  if (short_ieee_rne(acc) && mul_is(p, short_ieee_rne) && mul_fast_ieee_rne(p.mul) &&
      ieee_values_within(p.mul, acc) && fast_ieee_rne_f32_lean_ok(acc))
    return GemmPath::AccIeee;
  if (acc.family == Family::Fixed) return GemmPath::Int;
  if (mul_is(p, fast_posit_rne_f_supported) && fast_posit_rne_f_supported(acc) && !p.mul.accumulator_only &&
      !acc.accumulator_only)
    return GemmPath::Posit;
  return GemmPath::Generic;
}

namespace {

// The path for pb (the policy's, unless the data send it to the generic path), run. Split
// schemes need the operands as matrices: `dense` gives them (mac_gemm), else they run the
// generic path.
struct DenseOperands {
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
};
bool operands_finite(const Problem& pb, int threads) {
  return all_finite(pb.A->values(), threads) && all_finite(pb.B->values(), threads);
}

GemmPath run_gemm(const Problem& pb, GemmPath path, int threads, const DenseOperands* dense) {
  const MacPolicy& p = *pb.p;
  switch (path) {
    case GemmPath::Fp32: {
      // The fp32 kernel multiplies every term (Inf * 0 is NaN, where mac_reduce skips a zero term), so
      // it serves finite operands only. Without chunks it runs first and the operands are scanned only
      // where an accumulator ended non-finite (a non-finite operand makes every accumulator it reaches
      // Inf or NaN; finite ones that overflowed keep the kernel's result); non-finite operands send
      // the GEMM to the generic path, which writes every output again. The scan of the operands
      // first, instead, had cost ~1.5% of a ResNet-18 fp32 step.
      const bool chunked = p.chunk > 0;
      if (chunked && !operands_finite(pb, threads)) break;
      std::atomic<bool> nonfinite{false};
      run_fp32(pb, threads, chunked ? nullptr : &nonfinite);
      if (!nonfinite.load() || operands_finite(pb, threads)) return path;
      break;
    }
    case GemmPath::MulFmaF32:
      run_mul_fma(pb, threads);
      return path;
    case GemmPath::MulRneF32: {
      KernMulF32<ProductRne> kern;
      kern.p = p;
      kern.prod.pm = fast_ieee_rne_d_params(p.mul);
      fast_gemm(kern, pb, threads, true);
      return path;
    }
    case GemmPath::MulIeeeF32:
      if (operands_finite(pb, threads)) {
        visit_fast_mode(p.mul.rounding, [&](auto mode) { run_mul_ieee<decltype(mode)::value>(pb, threads); });
        return path;
      }
      break;
    case GemmPath::AccIeee:
      if (p.acc.exp_bits == 8) {
        run_acc_ieee<1>(pb, threads);
      } else {
        run_acc_ieee<0>(pb, threads);
      }
      return path;
    case GemmPath::Int: {
      KernInt kern;
      if (int_path(pb, &kern)) {
        fast_gemm(kern, pb, threads, binary32_valued(p.acc));
        return path;
      }
      break;
    }
    case GemmPath::Posit: {
      const FastPositRneF pm = fast_posit_rne_f_params(p.mul), pa = fast_posit_rne_f_params(p.acc);
      if (kPositTableLookup && pm.has_table && pa.has_table) {
        fast_gemm(KernPosit<true>(p, pm, pa), pb, threads, true);
      } else {
        fast_gemm(KernPosit<false>(p, pm, pa), pb, threads, true);
      }
      return path;
    }
    case GemmPath::Lut:
      lut_gemm(pb, threads);
      return path;
    case GemmPath::Split:
      if (dense && !pb.out.col_offset && !pb.out.bias_per_row) {
        split_gemm(p, dense->A, dense->lda, dense->B, dense->ldb, pb.out.C, pb.out.ldc, pb.M, pb.N, pb.K,
                   pb.out.bias, threads);
        return path;
      }
      break;
    case GemmPath::Generic:
      break;
  }
  generic_gemm(pb, threads);
  return GemmPath::Generic;
}

}  // namespace

void MatrixOperand::fill(int64_t x0, int64_t nx, int64_t k0, int64_t kc, float* dst, int64_t ld) const {
  if (a_) {  // element (k, i) = p[i * ld + k]: each row of A read contiguously
    const int64_t nx8 = nx / 8 * 8, kc8 = kc / 8 * 8;
    for (int64_t l = 0; l < nx8; l += 8)  // 8 x 8 blocks by shuffles
      for (int64_t q = 0; q < kc8; q += 8)
        cpu_copy::transpose_8x8(p_ + (x0 + l) * ld_ + k0 + q, ld_, dst + q * ld + l, ld);
    for (int64_t l = 0; l < nx; ++l) {  // the rest element by element
      const float* src = p_ + (x0 + l) * ld_ + k0;
      for (int64_t q = l < nx8 ? kc8 : 0; q < kc; ++q) dst[q * ld + l] = src[q];
    }
  } else {  // element (k, j) = p[k * ld + j]
    for (int64_t q = 0; q < kc; ++q) cpu_copy::copy_run(p_ + (k0 + q) * ld_ + x0, dst + q * ld, nx);
  }
}

GemmValues MatrixOperand::values() const { return {p_, rows_, cols_, ld_}; }

GemmPath mac_gemm_run(const MacPolicy& p, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                      int64_t ldc, int64_t M, int64_t N, int64_t K, const float* bias, const GemmDraws& draws,
                      int threads, bool force_generic) {
  if (M <= 0 || N <= 0) return GemmPath::Generic;
  const MatrixOperand a = MatrixOperand::of_rows(A, lda, M, K), b = MatrixOperand::of_columns(B, ldb, K, N);
  GemmOutput out;
  out.C = C;
  out.ldc = ldc;
  out.bias = bias;
  const Problem pb{&p, &a, &b, out, M, N, K, draws, mac_site_count(K, p.chunk)};
  threads = resolve_threads(threads);
  count_split_range(p, A, lda, B, ldb, M, N, K);  // split:auto / fp32f per-layer statistics
  const DenseOperands dense{A, lda, B, ldb};
  return run_gemm(pb, force_generic || K <= 0 ? GemmPath::Generic : gemm_policy_path(p), threads, &dense);
}

GemmPath mac_gemm_operands(const MacPolicy& p, const GemmOperand& A, const GemmOperand& B,
                           const GemmOutput& out, int64_t M, int64_t N, int64_t K, const GemmDraws& draws,
                           int threads) {
  if (M <= 0 || N <= 0) return GemmPath::Generic;
  const Problem pb{&p, &A, &B, out, M, N, K, draws, mac_site_count(K, p.chunk)};
  return run_gemm(pb, K <= 0 ? GemmPath::Generic : gemm_policy_path(p), resolve_threads(threads), nullptr);
}

void mac_gemm(const MacPolicy& p, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
              int64_t ldc, int64_t M, int64_t N, int64_t K, const float* bias, const GemmDraws& draws,
              int threads) {
  mac_gemm_run(p, A, lda, B, ldb, C, ldc, M, N, K, bias, draws, threads, false);
}

}  // namespace emu
