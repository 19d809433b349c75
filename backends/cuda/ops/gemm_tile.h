// The tiled multiply-accumulate kernel of the device: gemm, the convolutions
// (implicit GEMM) and the attention products are this one kernel with
// different operand loaders.
//
//   Problem P, batch b in [0, batches), output (row, col) of a rows x cols grid:
//     y = mac_reduce(p, A(b, row, 0..K), B(b, 0..K, col), K, P.bias(b, row, col))
//     written to s.c[o], o = P.out_index(b, row, col) (row-major in the op's result),
//     draws (:sr only) at philox_draw(key.seed, key.stream, o * mac_site_count(K, chunk) + site).
//
// A block of 16x16 threads computes a (16 TM) x (16 TN) tile of outputs; each
// thread keeps the running state of its TM x TN outputs in registers (register
// blocking) while k tiles of A (TK x 16 TM) and B (TK x 16 TN) pass through
// shared memory. Every output still takes its K terms one by one in ascending
// k (the step of the path), so tiling changes where operands come from, never
// the order or the roundings (docs/contract.md section 4): the bits are
// mac_reduce's. A term whose operand does not exist (convolution padding, a tap
// off the stride grid) is loaded as 0: mac_step skips it but it keeps its
// position k (chunk boundaries and draw sites), exactly like the zero the
// CPU's im2col writes.
//
// A Problem provides (host+device, cheap to copy):
//   RowCursor a_row(b, row); float a_at(const RowCursor&, k)   A's element (row, k)
//   ColCursor b_col(b, col); float b_at(const ColCursor&, k)   B's element (k, col)
//   uint64_t out_index(b, row, col); const float* bias(b, row, col)  (null: no bias)
//   static constexpr bool kSwapped: the term of (row, col, k) is mac_term(B, A) rather
//   than mac_term(A, B), the operand order of the CPU's reduction (a table
//   multiplier need not be symmetric), when the op's first operand is B.
// A cursor holds what does not depend on k (a row's address, a pixel's
// coordinates), made once per tile: each thread loads the same rows (A) and
// the same column (B) for every k tile, so only k is decoded per load.
//
// Paths, chosen per call from the policy at compile time (a template argument:
// the k loop carries no switch), as the CPU's (backends/cpu/gemm.h):
//   Generic     every policy: mac_step / mac_finish (binary64 state, exact
//               roundings through numerics/round.h), draws for :sr. Its state is
//               MacSums, or MacState (the 34 limbs of a fused run) only for
//               fused policies (docs/contract.md section 4.8).
//   Rounded     no chunks, no :sr, no table or split multiplier: MacRounding's
//               loop body (numerics/element_arith.h), products by FastRound
//               where the mul format allows, sums by rounded_add.
//   Fp32Mul     acc plain fp32, mul an IEEE format FastRound covers: the product
//               R_mul(a b) by FastRound of the exact binary64 product, the sum
//               one binary32 addition.
// and the fast paths, whose k tiles run a branch-free step when the block's
// operands of that tile allow it (tile_fast, decided once per tile from the
// largest exponent fields of the A and B tiles), and the checked step (the
// definition's, zero operands skipped) otherwise:
//   Fp32Native  mul and acc plain fp32: __fmul_rn, __fadd_rn. Fast when every
//               operand of the tile is finite.
//   MulFma      acc plain fp32, mul IEEE RNE with subnormals, exp_bits <= 8,
//               man_bits <= 21 (bf16, fp16, e4m3, e5m2, eXmY): the exact product
//               rounded once by fma(a, b, C) - C (fast_ieee_rne_product_f), a
//               binary32 sum. Fast when every operand is finite and no product
//               can reach the format's top binade (possible overflow).
//   AccIeee     mul and acc IEEE RNE with <= 11 significand bits, mul's values
//               within acc's (e6m6, fp16, bf16): the product as MulFma's, the
//               sum in binary32 and one rounding into acc (fast_ieee_rne_f32).
//   PositMul    acc plain fp32, mul a posit with a binary32 grid (posit16_1,
//               posit8_*): the product by fast_posit_rne_product_f where it is
//               unflagged, the exact rounding where it is not.
//
// Why a fast step gives the checked step's bits (zero operands are skipped by
// the definition, never by a fast step): with finite operands, a zero operand
// makes the product +-0 (rounded: +0), and the accumulator is never -0 (it
// starts at +0, and a binary32 sum is -0 only when both addends are -0), so
// adding it changes nothing; Inf * 0 cannot occur. NaN payloads may differ
// inside a binary32 sum, and mac_finish's roundings map every NaN to the one
// canonical NaN.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/device_lut.h"
#include "backends/cuda/ops/ptx_marks.h"
#include "backends/cuda/ops/scratch.h"
#include "core/split_stats.h"
#include "numerics/element_arith.h"
#include "numerics/fast_round.h"
#include "numerics/fp32_ops.h"
#include "numerics/mac.h"
#include "numerics/philox.h"

namespace emu::EMU_CUDA_NS::tile {

constexpr int kThreadsSide = 16;                       // threads per block side
constexpr int kThreads = kThreadsSide * kThreadsSide;  // threads per block
constexpr int kWarps = kThreads / 32;
constexpr unsigned kMaxGridYZ = 65535;  // CUDA's limit on gridDim.y and gridDim.z

// The tile shape of a path: TM x TN outputs per thread, k tiles of TK.
template <int TM, int TN, int TK>
struct Geometry {
  static constexpr int kTM = TM, kTN = TN, kTK = TK;
  static constexpr int kBM = kThreadsSide * TM, kBN = kThreadsSide * TN;  // outputs per block side
  // a_tile rows padded to keep 16-byte alignment (vector loads) with fewer bank conflicts on the stores.
  static constexpr int kAPitch = kBM + 4;
  static constexpr int kALoads = kBM * TK / kThreads;  // A elements one thread loads per k tile
  static constexpr int kBLoads = TK * kBN / kThreads;  // B elements
  static_assert(kThreads % TK == 0 && kThreads % kBN == 0 && kBM * TK % kThreads == 0 &&
                    TK * kBN % kThreads == 0,
                "each thread loads fixed rows at one k (A) and one column at fixed k offsets (B)");
};
// The fast paths: 128 x 128 outputs per block, 8 x 8 per thread: 16 operands
// from shared memory feed 64 MACs, and the loads into shared memory come to
// 1/64 element per MAC.
using WideTile = Geometry<8, 8, 16>;
// Paths with a binary64 state per output: 32 x 32 per block, 2 x 2 per thread.
using NarrowTile = Geometry<2, 2, 16>;
// Fp32MulPath: a binary32 state, but a large inline step (FastRound's modes): 4 x 4 per thread.
using MidTile = Geometry<4, 4, 16>;

// The draw of `site` of one output (only called under :sr).
struct OutputDraw {
  uint64_t seed, stream, base;
  EMU_HD uint32_t operator()(uint64_t site) const { return philox_draw(seed, stream, base + site); }
};

// n consecutive floats of shared memory at p (16-byte aligned when n % 4 == 0):
// vector loads on the device.
template <int N>
__device__ __forceinline__ void load_shared(const float* p, float (&out)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 4 == 0) {
    for (int i = 0; i < N; i += 4) {
      const float4 v = *reinterpret_cast<const float4*>(p + i);
      out[i] = v.x;
      out[i + 1] = v.y;
      out[i + 2] = v.z;
      out[i + 3] = v.w;
    }
  } else if constexpr (N % 2 == 0) {
    for (int i = 0; i < N; i += 2) {
      const float2 v = *reinterpret_cast<const float2*>(p + i);
      out[i] = v.x;
      out[i + 1] = v.y;
    }
  } else {
    for (int i = 0; i < N; ++i) out[i] = p[i];
  }
#else
  memcpy(out, p, sizeof out);
#endif
}

// The biased binary32 exponent field of |x| (255: Inf or NaN), in place (bits 23..30).
EMU_HD uint32_t exponent_bits(float x) { return float_bits(x) & 0x7f800000u; }

// ---------------------------------------------------------------------------
// Paths. Each has: Tile (a Geometry), State (one output's running state),
// kFast (it has a fast step), kDraws (its steps read draws), and
//   step(p, state, K, k, a, b, draw)   one term of the definition (zero skipped)
//   finish(p, state, K, bias, draw)    the result before the store (a binary32
//                                      state, Fp32State: finish_fp32)
// and with kFast:
//   tile_fast(ea, eb)   whether fast_step gives step's bits for every pair of
//                       operands whose exponent fields are at most ea (A) and eb (B)
//   fast_step(state, a, b)   branch free

// Every policy, through mac_step (kFused: the state holds a fused run).
template <bool kFused>
struct GenericPath {
  static constexpr const char* kName = kFused ? "GenericPath<fused>" : "GenericPath";
  using Tile = NarrowTile;
  static constexpr bool kFast = false, kDraws = true;
  using State = std::conditional_t<kFused, MacState, MacSums>;
  EMU_HD void step(const MacPolicy& p, State& s, int64_t K, int64_t k, float a, float b,
                   const OutputDraw& d) const {
    mac_step(p, s, K, k, a, b, d);
  }
  EMU_HD double finish(const MacPolicy& p, State& s, int64_t K, const float* bias,
                       const OutputDraw& d) const {
    return mac_finish(p, s, K, bias, d);
  }
};

// A binary32 accumulator's result: mac_finish of its value. The paths with a
// binary32 accumulator take no policy that draws (fp32_acc_policy,
// acc_ieee_policy: acc plain fp32 or RNE, out without :sr).
EMU_HD double finish_fp32(const MacPolicy& p, float acc, int64_t K, const float* bias) {
  MacSums m;
  m.acc = acc;
  return mac_finish(p, m, K, bias, NoDraw{});
}

struct RoundedPath {
  static constexpr const char* kName = "RoundedPath";
  using Tile = NarrowTile;
  static constexpr bool kFast = false, kDraws = false;
  struct State {
    double acc = 0.0;  // +0 in acc
  };
  FastRound mul, acc;
  EMU_HD void step(const MacPolicy& p, State& s, int64_t, int64_t, float a, float b,
                   const OutputDraw&) const {
    if (a == 0.0f || b == 0.0f) return;  // zero operands are skipped, as in mac_step
    double prod = static_cast<double>(a) * static_cast<double>(b);  // exact
    if (!p.mul_exact) prod = mul.on ? mul(prod) : round_value(p.mul, prod);
    s.acc = rounded_add(p.acc, acc, s.acc, prod, 0);
  }
  EMU_HD double finish(const MacPolicy& p, State& s, int64_t K, const float* bias, const OutputDraw&) const {
    MacSums m;  // rounded_policy: nothing draws
    m.acc = s.acc;
    return mac_finish(p, m, K, bias, NoDraw{});
  }
};

// The paths with a binary32 accumulator share their state and finish.
struct Fp32State {
  float acc = 0.0f;  // +0
};

// acc plain fp32, mul an IEEE format FastRound covers (any mode but :sr,
// :nosub, :sat, ...): R_mul(a b) from the exact binary64 product.
struct Fp32MulPath {
  static constexpr const char* kName = "Fp32MulPath";
  using Tile = MidTile;
  static constexpr bool kFast = false, kDraws = false;
  using State = Fp32State;
  FastRound mul;
  // The hardware's binary32 operations (__fmul_rn, __fadd_rn: never fused, the host executor
  // defines them too) without fp32::'s NaN canonicalisation: a NaN inside the sum stays a NaN
  // whatever its payload, and mac_finish's roundings (bias, R_out) map every NaN to the one
  // canonical NaN. Device-only (the intrinsics are): the tile kernel is its only caller.
  __device__ void step(const MacPolicy&, State& s, int64_t, int64_t, float a, float b,
                       const OutputDraw&) const {
    if (a == 0.0f || b == 0.0f) return;  // zero operands are skipped, as in mac_step
    s.acc = __fadd_rn(s.acc, static_cast<float>(mul(static_cast<double>(a) * static_cast<double>(b))));
  }
};

// mul and acc plain fp32.
struct Fp32NativePath {
  static constexpr const char* kName = "Fp32NativePath";
  using Tile = WideTile;
  static constexpr bool kFast = true, kDraws = false;
  using State = Fp32State;
  uint32_t finite_below = 0x7f800000u;  // the exponent field of Inf and NaN (a planted fault raises it)
  __device__ bool tile_fast(uint32_t ea, uint32_t eb) const {
    return ea < finite_below && eb < finite_below;  // finite operands
  }
  __device__ void fast_step(State& s, float a, float b) const { s.acc = __fadd_rn(s.acc, __fmul_rn(a, b)); }
  __device__ void step(const MacPolicy&, State& s, int64_t, int64_t, float a, float b,
                       const OutputDraw&) const {
    if (a == 0.0f || b == 0.0f) return;  // zero operands are skipped, as in mac_step
    fast_step(s, a, b);
  }
};

// The bound of tile_fast for products rounded by fast_ieee_rne_product_f or
// fast_posit_rne_product_f: |a| < 2^(ea - 126) for an exponent field ea (also
// for subnormals, ea = 0), so every product of the tile is below 2^(ea + eb -
// 252); with ea + eb <= flag exponent field + 125 it is below the format's
// flag threshold 2^F (F = field - 127), and its binary32 rounding at most 2^F.
// The limit in place (fields << 23), 0 when the format's flag threshold is
// below 2^-125 (never fast).
EMU_HD uint32_t product_sum_limit(uint32_t flag_bits) {
  const uint32_t field = flag_bits >> 23;
  return (field + 125) << 23;
}
EMU_HD bool products_below(uint32_t ea, uint32_t eb, uint32_t limit) {
  return ea < 0x7f800000u && eb < 0x7f800000u && ea + eb <= limit;
}

// acc plain fp32, mul IEEE RNE (fast_ieee_rne_product_f_supported).
struct MulFmaPath {
  static constexpr const char* kName = "MulFmaPath";
  using Tile = WideTile;
  static constexpr bool kFast = true, kDraws = false;
  using State = Fp32State;
  FastIeeeRneF pm;
  uint32_t limit;  // product_sum_limit(pm.flag_bits)
  FastRound mul;   // the checked step's exact rounding
  __device__ bool tile_fast(uint32_t ea, uint32_t eb) const { return products_below(ea, eb, limit); }
  __device__ void fast_step(State& s, float a, float b) const {
    uint32_t key;
    s.acc = __fadd_rn(s.acc, fast_ieee_rne_product_f<false>(pm, a, b, &key));
  }
  __device__ void step(const MacPolicy&, State& s, int64_t, int64_t, float a, float b,
                       const OutputDraw&) const {
    if (a == 0.0f || b == 0.0f) return;  // zero operands are skipped, as in mac_step
    s.acc = __fadd_rn(s.acc, static_cast<float>(mul(static_cast<double>(a) * static_cast<double>(b))));
  }
};

// mul and acc IEEE RNE with <= 11 significand bits, mul's values within acc's,
// acc with Inf and NaN, subnormals, no :sat (accieee_path): the rounded product
// (values of mul, so of acc), their binary32 sum, then one rounding into acc.
// The binary32 sum is the exact sum rounded to 24 >= 2 * 11 + 2 bits, which
// rounds to acc's precision as the exact sum does (docs/contract.md section 1.4;
// the backends/cpu AccIeee kernel's argument); the binary32 range holds every
// sum of two values of acc (exp_bits <= 8) without a coarser grid than acc's.
// The accumulator is a value of acc, never -0 (+0 + -0 is +0, and a nonzero sum
// of two values on acc's grid is at least its smallest step).
template <int kAccWide>  // acc has exp_bits == 8 (1) or fewer (0)
struct AccIeeePath {
  static constexpr const char* kName = kAccWide ? "AccIeeePath<wide>" : "AccIeeePath";
  using Tile = WideTile;
  static constexpr bool kFast = true, kDraws = false;
  using State = Fp32State;
  FastIeeeRneF pm;
  FastIeeeRneF32 pa;
  uint32_t limit;
  FastRound mul, acc;  // the checked step
  __device__ bool tile_fast(uint32_t ea, uint32_t eb) const { return products_below(ea, eb, limit); }
  __device__ void fast_step(State& s, float a, float b) const {
    uint32_t key;
    const float r = fast_ieee_rne_product_f<false>(pm, a, b, &key);
    const float sum = __fadd_rn(s.acc, r);
    const float q = fast_ieee_rne_f32<false, kAccWide>(pa, sum);
    // A NaN sum (the accumulator became NaN in a checked tile) stays NaN: the GPU's NaN is
    // 0x7fffffff, whose payload the lean rounding of exp_bits = 8 would carry into the sign.
    // The magic constant of the narrower formats keeps any NaN a NaN.
    if constexpr (kAccWide)
      s.acc = sum != sum ? sum : q;
    else
      s.acc = q;
  }
  __device__ void step(const MacPolicy& p, State& s, int64_t, int64_t, float a, float b,
                       const OutputDraw&) const {
    if (a == 0.0f || b == 0.0f) return;  // zero operands are skipped, as in mac_step
    const double prod = mul(static_cast<double>(a) * static_cast<double>(b));
    s.acc = static_cast<float>(rounded_add(p.acc, acc, s.acc, prod, 0));  // acc's values are binary32 values
  }
};

// acc plain fp32, mul a posit (fast_posit_rne_f_supported): the rounded product
// by the FMA where it lies in the posit's uniform-grid binades, else exactly.
struct PositMulPath {
  static constexpr const char* kName = "PositMulPath";
  using Tile = WideTile;
  static constexpr bool kFast = true, kDraws = false;
  using State = Fp32State;
  FastPositRneF pm;
  Format mul;
  // R_mul(a b) exactly (the checked steps and flagged products): out of line, one copy per file.
  static EMU_HD_OUTLINE float posit_product(const Format& mul, float a, float b) {
    return static_cast<float>(round_value(mul, static_cast<double>(a) * static_cast<double>(b)));
  }
  __device__ bool tile_fast(uint32_t ea, uint32_t eb) const {
    return ea < 0x7f800000u && eb < 0x7f800000u;  // finite operands; the rest is flagged per product
  }
  __device__ void fast_step(State& s, float a, float b) const {
    bool flag;
    float r = fast_posit_rne_product_f(pm, a, b, &flag);
    if (flag) {
      EMU_BUDGET_BEGIN(kSlow, 0);  // a product outside the uniform binades: rare for typical operands
      r = posit_product(mul, a, b);
      EMU_BUDGET_END(kSlow);
    }
    s.acc = __fadd_rn(s.acc, r);
  }
  __device__ void step(const MacPolicy&, State& s, int64_t, int64_t, float a, float b,
                       const OutputDraw&) const {
    if (a == 0.0f || b == 0.0f) return;  // zero operands are skipped, as in mac_step
    s.acc = __fadd_rn(s.acc, posit_product(mul, a, b));
  }
};

// ---------------------------------------------------------------------------
// Which path gives p's bits (see the top of this file).

inline bool fp32_acc_policy(const MacPolicy& p) {
  return is_plain_fp32(p.acc) && p.chunk == 0 && p.fused == 0 && !is_stochastic(p.out) && !p.mul_exact &&
         !custom_mul(p);
}
inline bool mul_fma_policy(const Format& m) {
  return m.family == Family::Ieee && !m.accumulator_only && fast_ieee_rne_product_f_supported(m) &&
         m.max_finite <= 3.4028234663852886e38;
}
// IEEE RNE with subnormals, <= 11 significand bits, binary32 values (backends/cpu/gemm.cpp short_ieee_rne).
inline bool short_ieee_rne(const Format& f) {
  return f.family == Family::Ieee && f.rounding == Rounding::NearestEven && f.subnormals &&
         f.man_bits <= 10 && !f.accumulator_only;
}
// Every finite value of sub is a value of super.
inline bool ieee_values_within(const Format& sub, const Format& super) {
  return sub.family == Family::Ieee && super.family == Family::Ieee && sub.man_bits <= super.man_bits &&
         sub.max_finite <= super.max_finite && sub.min_normal >= super.min_normal &&
         sub.emin - sub.man_bits >= super.emin - super.man_bits;
}
inline bool acc_ieee_policy(const MacPolicy& p) {
  return p.chunk == 0 && p.fused == 0 && !is_stochastic(p.out) && !p.mul_exact && !custom_mul(p) &&
         short_ieee_rne(p.acc) && short_ieee_rne(p.mul) && mul_fma_policy(p.mul) &&
         ieee_values_within(p.mul, p.acc) && fast_ieee_rne_f32_lean_ok(p.acc);
}
// Whether RoundedPath gives p's bits: nothing draws, one accumulator, no table.
inline bool rounded_policy(const MacPolicy& p) {
  const bool mul_rounds = !p.mul_exact;
  return p.chunk == 0 && p.fused == 0 && !is_stochastic(p.acc) && !is_stochastic(p.out) &&
         !(mul_rounds && is_stochastic(p.mul)) && !custom_mul(p);
}

// ---------------------------------------------------------------------------
// The kernel.

// What every launch of one op shares: the output grid, the result and the draws.
struct TileShape {
  int64_t rows = 0, cols = 0, K = 0, batches = 1;
  float* c = nullptr;  // the op's contiguous result
  DrawKey key{};
  uint64_t sites = 0;  // mac_site_count(K, chunk)
  // split:auto / split:fp32f with a statistics slot (core/split_stats.h):
  // outputs whose operands are all in fp32f's range ([0]) and the others ([1]),
  // added up on the device (launch_tiles reports them).
  unsigned long long* auto_counts = nullptr;
};

// The thread's outputs: rows row0 + ty*TM + i, columns col0 + tx*TN + j.
template <class Tile>
struct ThreadOutputs {
  int64_t row0, col0;
  EMU_HD int64_t row(int i) const { return row0 + static_cast<int64_t>(threadIdx.y) * Tile::kTM + i; }
  EMU_HD int64_t col(int j) const { return col0 + static_cast<int64_t>(threadIdx.x) * Tile::kTN + j; }
};

// split:auto (docs/contract.md section 5.6): each of the thread's outputs
// resolves its scheme from its own row of A and column of B before the first
// term, as mac_state_for does for mac_reduce's arrays (split:fp32f only counts).
template <class Tile, class Problem, class State>
__device__ void resolve_split_auto(const Problem& prob, const TileShape& s, int64_t b,
                                   const ThreadOutputs<Tile>& out, State (&state)[Tile::kTM][Tile::kTN]) {
  bool row_in[Tile::kTM], col_in[Tile::kTN];
  for (int i = 0; i < Tile::kTM; ++i) {
    const int64_t r = out.row(i);
    row_in[i] = true;
    if (r >= s.rows) continue;
    const typename Problem::RowCursor cur = prob.a_row(b, r);
    for (int64_t k = 0; k < s.K && row_in[i]; ++k) row_in[i] = split_auto_in_range(prob.a_at(cur, k));
  }
  for (int j = 0; j < Tile::kTN; ++j) {
    const int64_t c = out.col(j);
    col_in[j] = true;
    if (c >= s.cols) continue;
    const typename Problem::ColCursor cur = prob.b_col(b, c);
    for (int64_t k = 0; k < s.K && col_in[j]; ++k) col_in[j] = split_auto_in_range(prob.b_at(cur, k));
  }
  unsigned long long n[2] = {0, 0};
  for (int i = 0; i < Tile::kTM; ++i)
    for (int j = 0; j < Tile::kTN; ++j) {
      const bool f = row_in[i] && col_in[j];
      state[i][j].split = f ? SplitMul::Fp32F : SplitMul::Fp32B;
      if (out.row(i) < s.rows && out.col(j) < s.cols) ++n[f ? 0 : 1];
    }
  if (s.auto_counts) {
    if (n[0]) atomicAdd(&s.auto_counts[0], n[0]);
    if (n[1]) atomicAdd(&s.auto_counts[1], n[1]);
  }
}

template <class Tile>
struct SharedTiles {
  float a[Tile::kTK][Tile::kAPitch];  // a[k][row]
  float b[Tile::kTK][Tile::kBN];      // b[k][col]
  uint32_t emax[kWarps][2];           // per warp: the largest exponent fields of its A and B loads
};

// The draws of the thread's outputs for the steps: only the Generic path's steps draw.
template <class Path, class Tile = typename Path::Tile>
using StepDraws = OutputDraw[Path::kDraws ? Tile::kTM : 1][Path::kDraws ? Tile::kTN : 1];

// Term k of the thread's outputs by the checked step (the definition).
template <class Problem, class Path, class Tile = typename Path::Tile>
__device__ __forceinline__ void checked_steps(const MacPolicy& p, const Path& path,
                                              typename Path::State (&state)[Tile::kTM][Tile::kTN],
                                              const StepDraws<Path>& draw, int64_t K, int64_t k,
                                              const float* a_row, const float* b_row) {
  EMU_BUDGET_BEGIN(kStep, Tile::kTM * Tile::kTN);
  float av[Tile::kTM], bv[Tile::kTN];
  load_shared(a_row + threadIdx.y * Tile::kTM, av);
  load_shared(b_row + threadIdx.x * Tile::kTN, bv);
#pragma unroll
  for (int i = 0; i < Tile::kTM; ++i)
#pragma unroll
    for (int j = 0; j < Tile::kTN; ++j) {
      const OutputDraw& d = draw[Path::kDraws ? i : 0][Path::kDraws ? j : 0];
      if constexpr (Problem::kSwapped)
        path.step(p, state[i][j], K, k, bv[j], av[i], d);
      else
        path.step(p, state[i][j], K, k, av[i], bv[j], d);
    }
  EMU_BUDGET_END(kStep);
}

// The same by the fast step. The products of the fast paths are symmetric in
// their operands, so kSwapped does not matter.
template <class Path, class Tile = typename Path::Tile>
__device__ __forceinline__ void fast_steps(const Path& path,
                                           typename Path::State (&state)[Tile::kTM][Tile::kTN],
                                           const float* a_row, const float* b_row) {
  EMU_BUDGET_BEGIN(kStep, Tile::kTM * Tile::kTN);
  float av[Tile::kTM], bv[Tile::kTN];
  load_shared(a_row + threadIdx.y * Tile::kTM, av);
  load_shared(b_row + threadIdx.x * Tile::kTN, bv);
#pragma unroll
  for (int i = 0; i < Tile::kTM; ++i)
#pragma unroll
    for (int j = 0; j < Tile::kTN; ++j) path.fast_step(state[i][j], av[i], bv[j]);
  EMU_BUDGET_END(kStep);
}

// Output (i, j) of the thread's tile in the result, or null outside the grid.
template <class Problem, class Tile>
__device__ float* output_slot(const Problem& prob, const TileShape& s, int64_t b,
                              const ThreadOutputs<Tile>& out, int i, int j) {
  const int64_t r = out.row(i), col = out.col(j);
  return r < s.rows && col < s.cols ? s.c + prob.out_index(b, r, col) : nullptr;
}

// The binary32 accumulators of the fast paths into their outputs (raw, before
// mac_finish), and back: only this thread touches its outputs.
template <class Problem, class Tile>
__device__ __forceinline__ void store_accumulators(const Problem& prob, const TileShape& s, int64_t b,
                                                   const ThreadOutputs<Tile>& out,
                                                   Fp32State (&state)[Tile::kTM][Tile::kTN]) {
#pragma unroll
  for (int i = 0; i < Tile::kTM; ++i)
#pragma unroll
    for (int j = 0; j < Tile::kTN; ++j)
      if (float* c = output_slot(prob, s, b, out, i, j)) *c = state[i][j].acc;
}
template <class Problem, class Tile>
__device__ __forceinline__ void load_accumulators(const Problem& prob, const TileShape& s, int64_t b,
                                                  const ThreadOutputs<Tile>& out,
                                                  Fp32State (&state)[Tile::kTM][Tile::kTN]) {
#pragma unroll
  for (int i = 0; i < Tile::kTM; ++i)
#pragma unroll
    for (int j = 0; j < Tile::kTN; ++j)
      if (const float* c = output_slot(prob, s, b, out, i, j)) state[i][j].acc = *c;
}

// A k tile of a fast path that its fast step does not take (an operand Inf or
// NaN, a product that may overflow, the partial last tile): the checked step,
// output by output, each accumulator through its output's memory (the caller
// stores them before and loads them after). So the states stay registers (a
// loop over them would index the array), and the checked step's out-of-line
// calls find no state live.
template <class Problem, class Path, class Tile = typename Path::Tile>
__device__ __noinline__ void checked_tile_in_memory(const MacPolicy& p, const Path& path, const Problem& prob,
                                                    const TileShape& s, int64_t b, int64_t row0, int64_t col0,
                                                    int64_t k0, int64_t kn, const SharedTiles<Tile>& sh) {
  const ThreadOutputs<Tile> out{row0, col0};
  const OutputDraw none{};  // the fast paths' steps draw nothing
  for (int i = 0; i < Tile::kTM; ++i)
    for (int j = 0; j < Tile::kTN; ++j) {
      float* c = output_slot(prob, s, b, out, i, j);
      if (!c) continue;
      Fp32State st{*c};
      for (int64_t kk = 0; kk < kn; ++kk) {
        const float av = sh.a[kk][threadIdx.y * Tile::kTM + i], bv = sh.b[kk][threadIdx.x * Tile::kTN + j];
        if constexpr (Problem::kSwapped)
          path.step(p, st, s.K, k0 + kk, bv, av, none);
        else
          path.step(p, st, s.K, k0 + kk, av, bv, none);
      }
      *c = st.acc;
    }
}

// The tile of outputs (row0.., col0..) of batch b.
template <class Path, class Problem, class Tile = typename Path::Tile>
__device__ void mac_tile(const MacPolicy& p, const Path& path, const Problem& prob, const TileShape& s,
                         int64_t b, int64_t row0, int64_t col0, SharedTiles<Tile>& sh) {
  constexpr int TM = Tile::kTM, TN = Tile::kTN, TK = Tile::kTK;
  const int flat = static_cast<int>(threadIdx.y) * kThreadsSide + static_cast<int>(threadIdx.x);
  const ThreadOutputs<Tile> out{row0, col0};

  typename Path::State state[TM][TN];
  // Only the Generic path's steps draw; the others compute their draws at the end.
  StepDraws<Path> draw = {};
  if constexpr (Path::kDraws) {
    for (int i = 0; i < TM; ++i)
      for (int j = 0; j < TN; ++j) {
        const int64_t r = out.row(i), col = out.col(j);
        const uint64_t o = r < s.rows && col < s.cols ? prob.out_index(b, r, col) : 0;
        draw[i][j] = OutputDraw{s.key.seed, s.key.stream, o * s.sites};
      }
    if (!p.mul_exact && (p.split == SplitMul::Auto || s.auto_counts))
      resolve_split_auto(prob, s, b, out, state);
  }

  // This thread loads A's rows flat / TK + l * (kThreads / TK) at k offset flat % TK,
  // and B's column flat % BN at k offsets flat / BN + l * (kThreads / BN).
  const int a_k = flat % TK, b_c = flat % Tile::kBN;
  typename Problem::RowCursor a_rows[Tile::kALoads];
  bool a_in[Tile::kALoads];
  for (int l = 0; l < Tile::kALoads; ++l) {
    const int64_t r = row0 + flat / TK + l * (kThreads / TK);
    a_in[l] = r < s.rows;
    a_rows[l] = a_in[l] ? prob.a_row(b, r) : typename Problem::RowCursor{};
  }
  const bool b_in = col0 + b_c < s.cols;
  const typename Problem::ColCursor b_cursor =
      b_in ? prob.b_col(b, col0 + b_c) : typename Problem::ColCursor{};

  // An interior k tile (all its rows, columns and k inside the problem, uniform over the block)
  // loads without bounds checks: the steady state of a large product.
  const bool block_inside = row0 + Tile::kBM <= s.rows && col0 + Tile::kBN <= s.cols;
  for (int64_t k0 = 0; k0 < s.K; k0 += TK) {
    EMU_BUDGET_BEGIN(kTile, TK * TM * TN);
    uint32_t ea = 0, eb = 0;  // the largest exponent fields this thread loads
    if (block_inside && k0 + TK <= s.K) {
#pragma unroll
      for (int l = 0; l < Tile::kALoads; ++l) {
        const float v = prob.a_at(a_rows[l], k0 + a_k);
        ea = lane_umax(ea, exponent_bits(v));
        sh.a[a_k][flat / TK + l * (kThreads / TK)] = v;
      }
#pragma unroll
      for (int l = 0; l < Tile::kBLoads; ++l) {
        const int kb = flat / Tile::kBN + l * (kThreads / Tile::kBN);
        const float v = prob.b_at(b_cursor, k0 + kb);
        eb = lane_umax(eb, exponent_bits(v));
        sh.b[kb][b_c] = v;
      }
    } else {
      EMU_BUDGET_BEGIN(kSlow, 0);  // a tile on the problem's edge
      // Outside the grid or past K: 0 (never stepped).
      for (int l = 0; l < Tile::kALoads; ++l) {
        const int64_t ka = k0 + a_k;
        const float v = a_in[l] && ka < s.K ? prob.a_at(a_rows[l], ka) : 0.0f;
        ea = lane_umax(ea, exponent_bits(v));
        sh.a[a_k][flat / TK + l * (kThreads / TK)] = v;
      }
      for (int l = 0; l < Tile::kBLoads; ++l) {
        const int kb = flat / Tile::kBN + l * (kThreads / Tile::kBN);
        const float v = b_in && k0 + kb < s.K ? prob.b_at(b_cursor, k0 + kb) : 0.0f;
        eb = lane_umax(eb, exponent_bits(v));
        sh.b[kb][b_c] = v;
      }
      EMU_BUDGET_END(kSlow);
    }
    if constexpr (Path::kFast) {  // the block's largest exponent fields of this tile, per warp
      ea = __reduce_max_sync(0xffffffffu, ea);
      eb = __reduce_max_sync(0xffffffffu, eb);
      if (flat % 32 == 0) {
        sh.emax[flat / 32][0] = ea;
        sh.emax[flat / 32][1] = eb;
      }
    }
    __syncthreads();
    const int64_t kn = s.K - k0 < TK ? s.K - k0 : TK;
    if constexpr (Path::kFast) {
      uint32_t ma = 0, mb = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        ma = lane_umax(ma, sh.emax[w][0]);
        mb = lane_umax(mb, sh.emax[w][1]);
      }
      if (kn == TK && path.tile_fast(ma, mb)) {  // uniform over the block
        // Two steps per iteration: fully unrolled, ptxas holds the operands of all 16 steps at
        // once and reaches 255 registers (spilling under the convolution loaders).
#pragma unroll 2
        for (int kk = 0; kk < TK; ++kk) fast_steps(path, state, sh.a[kk], sh.b[kk]);
      } else {
        EMU_BUDGET_BEGIN(kSlow, 0);  // the last, partial tile, or operands the fast step does not take
        store_accumulators(prob, s, b, out, state);
        checked_tile_in_memory<Problem>(p, path, prob, s, b, row0, col0, k0, kn, sh);
        load_accumulators(prob, s, b, out, state);
        EMU_BUDGET_END(kSlow);
      }
    } else {
      for (int kk = 0; kk < kn; ++kk)
        checked_steps<Problem>(p, path, state, draw, s.K, k0 + kk, sh.a[kk], sh.b[kk]);
    }
    __syncthreads();  // the next tile overwrites what others may still read
    EMU_BUDGET_END(kTile);
  }

  if constexpr (std::is_same<typename Path::State, Fp32State>::value) {
    // The accumulators to their outputs first (unrolled: every state stays a register), then
    // each result from there: mac_finish's out-of-line roundings are called with no state live.
    store_accumulators(prob, s, b, out, state);
    for (int i = 0; i < TM; ++i)
      for (int j = 0; j < TN; ++j) {
        float* c = output_slot(prob, s, b, out, i, j);
        if (!c) continue;
        *c = static_cast<float>(finish_fp32(p, *c, s.K, prob.bias(b, out.row(i), out.col(j))));
      }
  } else {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int64_t r = out.row(i), col = out.col(j);
        if (r >= s.rows || col >= s.cols) continue;
        const uint64_t o = prob.out_index(b, r, col);
        const OutputDraw d = Path::kDraws ? draw[Path::kDraws ? i : 0][Path::kDraws ? j : 0]
                                          : OutputDraw{s.key.seed, s.key.stream, o * s.sites};
        s.c[o] = static_cast<float>(path.finish(p, state[i][j], s.K, prob.bias(b, r, col), d));
      }
  }
}

// Blocks (x: column tile, y: row tile, z: batch); grids larger than CUDA's y
// and z limits loop (a block's whole loop body is uniform, so its barriers are).
// At least one block per SM (__launch_bounds__'s second argument, PTX
// .minnctapersm): without it ptxas aims at two blocks of 256 threads and caps a
// thread at 128 registers, and the e6m6 path under gemm's loader spilled 1956
// bytes a thread where 214 registers hold it (the budget table,
// docs/cuda_kernels.md).
// The parameters are __grid_constant__: a slow path that takes the address of
// one of their formats (an out-of-line rounding) reads it in place instead of
// making the kernel copy the policy to local memory.
template <class Path, class Problem>
__global__ void __launch_bounds__(kThreads, 1)
    mac_tile_kernel(const __grid_constant__ MacPolicy p, const __grid_constant__ Path path,
                    const __grid_constant__ Problem prob, const __grid_constant__ TileShape s) {
  using Tile = typename Path::Tile;
  __shared__ __align__(16) SharedTiles<Tile> sh;
  const int64_t row_tiles = (s.rows + Tile::kBM - 1) / Tile::kBM;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * Tile::kBN;
  for (int64_t b = blockIdx.z; b < s.batches; b += gridDim.z)
    for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y)
      mac_tile(p, path, prob, s, b, rt * Tile::kBM, col0, sh);
}

// ---------------------------------------------------------------------------
// Planted faults, a test hook (docs/validate.md "Planted faults in the tile
// paths"). With EMUTRAIN_PLANT_FAULT=<path>:<fast|checked> in the environment
// (<path> a kName above), launch_tiles runs that path with one parameter off:
//   fast      the fast step's product rounded one bit coarser (PositMulPath:
//             on the grid of one more fraction bit; Fp32NativePath: its tile
//             test lets Inf and NaN through);
//   checked   the checked step's product left unrounded (binary64), for the
//             paths whose checked step rounds through a FastRound (not
//             PositMulPath's, which is round_value's).
// validate must then FAIL on the cases that reach that step (tests/validate.cmake
// validate_detects_path_faults): the proof that its cases reach every path.
// Host side only: the kernels' code is the same with or without a fault.
struct PlantedFault {
  std::string path;  // empty: none
  bool fast = false;
};
inline PlantedFault planted_fault() {
  const char* raw = std::getenv("EMUTRAIN_PLANT_FAULT");
  if (!raw || !*raw) return {};
  const std::string spec(raw);
  const size_t colon = spec.rfind(':');
  const std::string step = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (step != "fast" && step != "checked")
    throw std::invalid_argument(
        fmt::format("EMUTRAIN_PLANT_FAULT='{}': want <path>:fast or <path>:checked, <path> a tile path such "
                    "as MulFmaPath",
                    spec));
  return {spec.substr(0, colon), step == "fast"};
}
// One bit coarser: the rounding's parameters of one fewer significand bit.
inline void coarser(FastIeeeRneF& r) { r.shift += 1u << 23; }
// No rounding at all: R as for plain fp64.
inline void unrounded(FastRound& r) { r.on = r.fp64 = true; }
inline void plant(Fp32NativePath& path, bool fast) {
  if (fast) path.finite_below = 0xffffffffu;
}
inline void plant(MulFmaPath& path, bool fast) { fast ? coarser(path.pm) : unrounded(path.mul); }
template <int kAccWide>
void plant(AccIeeePath<kAccWide>& path, bool fast) {
  fast ? coarser(path.pm) : unrounded(path.mul);
}
inline void plant(PositMulPath& path, bool fast) {
  if (fast) path.pm.base += 1;  // the grid of a posit with one more fraction bit
}
inline void plant(Fp32MulPath& path, bool fast) {
  if (!fast) unrounded(path.mul);
}
inline void plant(RoundedPath& path, bool fast) {
  if (!fast) unrounded(path.mul);
}
template <bool kFused>
void plant(GenericPath<kFused>&, bool) {}  // mac_step itself: not a fast path's code
template <class Path>
Path with_planted_fault(Path path) {
  const PlantedFault f = planted_fault();
  if (!f.path.empty() && f.path == Path::kName) plant(path, f.fast);
  return path;
}

template <class Path, class Problem>
void launch_path(const char* name, const MacPolicy& p, const Path& unplanted, const Problem& prob,
                 const TileShape& s) {
  using Tile = typename Path::Tile;
  const Path path = with_planted_fault(unplanted);
  const auto tiles = [](int64_t n, int64_t side) { return (n + side - 1) / side; };
  if (tiles(s.cols, Tile::kBN) > 0x7fffffff)
    throw std::invalid_argument(
        fmt::format("{}: {} output columns exceed the launch grid", current_op(), s.cols));
  const dim3 grid(static_cast<unsigned>(tiles(s.cols, Tile::kBN)),
                  static_cast<unsigned>(std::min<int64_t>(tiles(s.rows, Tile::kBM), kMaxGridYZ)),
                  static_cast<unsigned>(std::min<int64_t>(s.batches, kMaxGridYZ)));
  const std::string label = fmt::format("{}<{}>", name, Path::kName);
  gpu::launch(label.c_str(), mac_tile_kernel<Path, Problem>, grid, dim3(kThreadsSide, kThreadsSide), 0,
              stream(), p, path, prob, s);
}

// The fast paths' parameters.
inline MulFmaPath mul_fma_path(const Format& mul) {
  MulFmaPath path{fast_ieee_rne_f_params(mul), 0, FastRound(mul)};
  path.limit = product_sum_limit(path.pm.flag_bits);
  return path;
}
template <int kAccWide>
AccIeeePath<kAccWide> acc_ieee_path(const MacPolicy& p) {
  AccIeeePath<kAccWide> path{fast_ieee_rne_f_params(p.mul), fast_ieee_rne_f32_params(p.acc), 0,
                             FastRound(p.mul), FastRound(p.acc)};
  path.limit = product_sum_limit(path.pm.flag_bits);
  return path;
}

// Runs prob's outputs (s.c, s.key set by the caller; sites filled in here)
// under `policy` on the fastest path that gives its bits. Nothing to do for an
// empty grid. `name` names the op's kernel in launch errors.
template <class Problem>
void launch_tiles(const char* name, const MacPolicy& policy, const Problem& prob, TileShape s) {
  if (s.rows <= 0 || s.cols <= 0 || s.batches <= 0) return;
  const MacPolicy p = with_device_lut(policy);  // a multiplier table the kernel can read
  s.sites = mac_site_count(s.K, p.chunk);
  const Format& m = p.mul;
  if (fp32_acc_policy(p) && is_plain_fp32(m)) {
    launch_path(name, p, Fp32NativePath{}, prob, s);
  } else if (fp32_acc_policy(p) && mul_fma_policy(m)) {
    launch_path(name, p, mul_fma_path(m), prob, s);
  } else if (fp32_acc_policy(p) && m.family == Family::Ieee && !m.accumulator_only &&
             fast_ieee_d_supported(m)) {
    launch_path(name, p, Fp32MulPath{FastRound(m)}, prob, s);
  } else if (fp32_acc_policy(p) && fast_posit_rne_f_supported(m) && !m.accumulator_only) {
    launch_path(name, p, PositMulPath{fast_posit_rne_f_params(m), m}, prob, s);
  } else if (acc_ieee_policy(p)) {
    if (p.acc.exp_bits == 8)
      launch_path(name, p, acc_ieee_path<1>(p), prob, s);
    else
      launch_path(name, p, acc_ieee_path<0>(p), prob, s);
  } else if (rounded_policy(p)) {
    launch_path(name, p, RoundedPath{FastRound(p.mul), FastRound(p.acc)}, prob, s);
  } else {
    // split:auto / fp32f per-layer statistics (core/split_stats.h): counted on the device.
    const bool count = split_stats_counted(p);
    std::unique_ptr<DeviceArray<unsigned long long>> counts(count ? new DeviceArray<unsigned long long>(2)
                                                                  : nullptr);
    s.auto_counts = count ? counts->get() : nullptr;
    if (p.fused > 0)
      launch_path(name, p, GenericPath<true>{}, prob, s);
    else
      launch_path(name, p, GenericPath<false>{}, prob, s);
    if (count) {
      unsigned long long n[2];
      copy_to_host(n, counts->get(), sizeof n);
      const uint64_t per = static_cast<uint64_t>(s.K);
      split_stats_add(p.stats_slot, SplitRangeCounts{n[0], n[1], n[0] * per, n[1] * per});
    }
  }
}

}  // namespace emu::EMU_CUDA_NS::tile
