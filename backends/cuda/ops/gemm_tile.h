// The tiled multiply-accumulate kernel of the device: gemm, the convolutions
// (implicit GEMM) and the attention products are this one kernel with
// different operand loaders.
//
//   Problem P, batch b in [0, batches), output (row, col) of a rows x cols grid:
//     y = mac_reduce(p, A(b, row, 0..K), B(b, 0..K, col), K, P.bias(b, row, col))
//     written to s.c[o], o = P.out_index(b, row, col) (row-major in the op's result),
//     draws (:sr only) at philox_draw(key.seed, key.stream, o * mac_site_count(K, chunk) + site).
//
// A block of 16x16 threads computes a 32x32 tile of outputs; each thread keeps
// the running state of its 2x2 outputs in registers (register blocking) while
// 32x16 tiles of A and 16x32 tiles of B pass through shared memory. Every
// output still takes its K terms one by one in ascending k (the step of the
// path), so tiling changes where operands come from, never the order or the
// roundings (docs/contract.md section 4): the bits are mac_reduce's. A term
// whose operand does not exist (convolution padding, a tap off the stride
// grid) is loaded as 0: mac_step skips it but it keeps its position k (chunk
// boundaries and draw sites), exactly like the zero the CPU's im2col writes.
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
// Paths, chosen per call from the policy like the CPU's (backends/cpu/gemm.h):
//   Generic  every policy: mac_step / mac_finish (binary64 state, exact roundings
//            through numerics/round.h), draws for :sr; the only path for fused
//            runs (docs/contract.md section 4.8), whose state holds the run.
//   Fp32Acc  acc plain fp32, no chunks, no :sr, no table multiplier, and mul
//            plain fp32 or an IEEE format whose values are binary32 values
//            (not accumulator-only) rounded by FastRound: the accumulator is
//            a binary32 register, each product is R_mul(a b) as a binary32
//            value and each accumulation is one binary32 addition, which is
//            R_fp32 of the exact sum: the Generic path's bits. NaN payloads
//            may differ inside the sum, and R_out canonicalises them.
//   Rounded  no chunks, no :sr, no table multiplier, any other accumulator:
//            MacRounding's loop body (numerics/element_arith.h), products by
//            FastRound where the mul format allows, sums by rounded_add (the
//            exact rounding, short-cut when binary64 arithmetic already decides
//            it); mac_finish adds the bias and rounds to out.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/device_lut.h"
#include "backends/cuda/ops/ptx_marks.h"
#include "backends/cuda/ops/scratch.h"
#include "core/split_stats.h"
#include "numerics/element_arith.h"
#include "numerics/fp32_ops.h"
#include "numerics/mac.h"
#include "numerics/philox.h"

namespace emu::EMU_CUDA_NS::tile {

constexpr int kTile = 32;                              // outputs per block side
constexpr int kTileK = 16;                             // k per shared-memory tile
constexpr int kThreadsSide = 16;                       // threads per block side
constexpr int kThreads = kThreadsSide * kThreadsSide;  // threads per block
constexpr int kPer = kTile / kThreadsSide;             // outputs per thread side (register blocking)
constexpr int kLoads = kTile * kTileK / kThreads;      // elements of each operand tile one thread loads
constexpr unsigned kMaxGridYZ = 65535;                 // CUDA's limit on gridDim.y and gridDim.z
static_assert(kThreads % kTileK == 0 && kThreads % kTile == 0,
              "each thread loads fixed rows / a fixed column");

// The draw of `site` of one output (only called under :sr).
struct OutputDraw {
  uint64_t seed, stream, base;
  EMU_HD uint32_t operator()(uint64_t site) const { return philox_draw(seed, stream, base + site); }
};

struct GenericPath {
  static constexpr const char* kName = "GenericPath";
  static constexpr bool kUnroll = false;  // the step is large: unrolling would only grow the code
  using State = MacState;
  EMU_HD void step(const MacPolicy& p, State& s, int64_t K, int64_t k, float a, float b,
                   const OutputDraw& d) const {
    mac_step(p, s, K, k, a, b, d);
  }
  EMU_HD double finish(const MacPolicy& p, State& s, int64_t K, const float* bias,
                       const OutputDraw& d) const {
    return mac_finish(p, s, K, bias, d);
  }
};

// How Fp32AccPath forms R_mul(a b): one binary32 multiplication (mul plain
// fp32), or FastRound of the exact binary64 product. A template argument, so
// the inner loop carries no branch on it.
enum class Fp32Mul { Native, Rounded };

template <Fp32Mul kMul>
struct Fp32AccPath {
  static constexpr const char* kName =
      kMul == Fp32Mul::Native ? "Fp32AccPath<Native>" : "Fp32AccPath<Rounded>";
  static constexpr bool kUnroll = true;
  struct State {
    float acc = 0.0f;  // +0
  };
  FastRound mul;  // used when kMul is Rounded
  // The hardware's binary32 operations (__fmul_rn, __fadd_rn: never fused, the host executor
  // defines them too) without fp32::'s NaN canonicalisation: a NaN inside the sum stays a NaN
  // whatever its payload, and mac_finish's roundings (bias, R_out) map every NaN to the one
  // canonical NaN, so the result's bits are the same and the inner loop is two operations
  // shorter per term. Device-only (the intrinsics are): the tile kernel is its only caller.
  __device__ void step(const MacPolicy&, State& s, int64_t, int64_t, float a, float b,
                       const OutputDraw&) const {
    if (a == 0.0f || b == 0.0f) return;  // zero operands are skipped, as in mac_step
    const float prod = kMul == Fp32Mul::Native
                           ? __fmul_rn(a, b)
                           : static_cast<float>(mul(static_cast<double>(a) * static_cast<double>(b)));
    s.acc = __fadd_rn(s.acc, prod);
  }
  EMU_HD double finish(const MacPolicy& p, State& s, int64_t K, const float* bias,
                       const OutputDraw& d) const {
    MacState m;
    m.acc = s.acc;
    return mac_finish(p, m, K, bias, d);
  }
};

struct RoundedPath {
  static constexpr const char* kName = "RoundedPath";
  static constexpr bool kUnroll = false;
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
  EMU_HD double finish(const MacPolicy& p, State& s, int64_t K, const float* bias,
                       const OutputDraw& d) const {
    MacState m;
    m.acc = s.acc;
    return mac_finish(p, m, K, bias, d);
  }
};

// Whether Fp32AccPath gives p's bits (see the top of this file).
inline bool fp32_acc_path(const MacPolicy& p) {
  if (!is_plain_fp32(p.acc) || p.chunk != 0 || p.fused != 0 || is_stochastic(p.out) || p.mul_exact)
    return false;
  if (custom_mul(p)) return false;  // table or split products: the Generic path
  const Format& m = p.mul;
  return is_plain_fp32(m) || (m.family == Family::Ieee && !m.accumulator_only && fast_ieee_d_supported(m));
}

// Whether RoundedPath gives p's bits: nothing draws, one accumulator, no table.
inline bool rounded_path(const MacPolicy& p) {
  const bool mul_rounds = !p.mul_exact;
  return p.chunk == 0 && p.fused == 0 && !is_stochastic(p.acc) && !is_stochastic(p.out) &&
         !(mul_rounds && is_stochastic(p.mul)) && !custom_mul(p);
}

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

// split:auto (docs/contract.md section 5.6): each of the thread's outputs
// resolves its scheme from its own row of A and column of B before the first
// term, as mac_state_for does for mac_reduce's arrays (split:fp32f only counts).
template <class Problem>
__device__ void resolve_split_auto(const Problem& prob, const TileShape& s, int64_t b, int64_t row0,
                                   int64_t col0, MacState (&state)[kPer][kPer]) {
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  bool row_in[kPer], col_in[kPer];
  for (int i = 0; i < kPer; ++i) {
    const int64_t r = row0 + ty + kThreadsSide * i;
    row_in[i] = true;
    if (r >= s.rows) continue;
    const typename Problem::RowCursor cur = prob.a_row(b, r);
    for (int64_t k = 0; k < s.K && row_in[i]; ++k) row_in[i] = split_auto_in_range(prob.a_at(cur, k));
  }
  for (int j = 0; j < kPer; ++j) {
    const int64_t c = col0 + tx + kThreadsSide * j;
    col_in[j] = true;
    if (c >= s.cols) continue;
    const typename Problem::ColCursor cur = prob.b_col(b, c);
    for (int64_t k = 0; k < s.K && col_in[j]; ++k) col_in[j] = split_auto_in_range(prob.b_at(cur, k));
  }
  unsigned long long n[2] = {0, 0};
  for (int i = 0; i < kPer; ++i)
    for (int j = 0; j < kPer; ++j) {
      const bool f = row_in[i] && col_in[j];
      state[i][j].split = f ? SplitMul::Fp32F : SplitMul::Fp32B;
      if (row0 + ty + kThreadsSide * i < s.rows && col0 + tx + kThreadsSide * j < s.cols) ++n[f ? 0 : 1];
    }
  if (s.auto_counts) {
    if (n[0]) atomicAdd(&s.auto_counts[0], n[0]);
    if (n[1]) atomicAdd(&s.auto_counts[1], n[1]);
  }
}

// Term k0 + kk of the thread's 2x2 outputs (rows ty + 16 i, columns tx + 16 j:
// neighbouring threads read neighbouring shared-memory columns).
template <class Problem, class Path>
__device__ __forceinline__ void tile_steps(const MacPolicy& p, const Path& path,
                                           typename Path::State (&state)[kPer][kPer],
                                           const OutputDraw (&draw)[kPer][kPer], int64_t K, int64_t k0,
                                           int kk, const float (&a_tile)[kTileK][kTile + 1],
                                           const float (&b_tile)[kTileK][kTile]) {
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  EMU_BUDGET_BEGIN("step", kPer * kPer);
  for (int i = 0; i < kPer; ++i)
    for (int j = 0; j < kPer; ++j) {
      const float av = a_tile[kk][ty + kThreadsSide * i], bv = b_tile[kk][tx + kThreadsSide * j];
      if constexpr (Problem::kSwapped)
        path.step(p, state[i][j], K, k0 + kk, bv, av, draw[i][j]);
      else
        path.step(p, state[i][j], K, k0 + kk, av, bv, draw[i][j]);
    }
  EMU_BUDGET_END("step");
}

// The tile of outputs (row0.., col0..) of batch b.
template <class Path, class Problem>
__device__ void mac_tile(const MacPolicy& p, const Path& path, const Problem& prob, const TileShape& s,
                         int64_t b, int64_t row0, int64_t col0, float (&a_tile)[kTileK][kTile + 1],
                         float (&b_tile)[kTileK][kTile]) {
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int flat = ty * kThreadsSide + tx;

  typename Path::State state[kPer][kPer];
  OutputDraw draw[kPer][kPer];
  for (int i = 0; i < kPer; ++i)
    for (int j = 0; j < kPer; ++j) {
      const int64_t r = row0 + ty + kThreadsSide * i, col = col0 + tx + kThreadsSide * j;
      const uint64_t o = r < s.rows && col < s.cols ? prob.out_index(b, r, col) : 0;
      draw[i][j] = OutputDraw{s.key.seed, s.key.stream, o * s.sites};
    }
  if constexpr (std::is_same<typename Path::State, MacState>::value) {
    if (!p.mul_exact && (p.split == SplitMul::Auto || s.auto_counts))
      resolve_split_auto(prob, s, b, row0, col0, state);
  }

  // This thread loads A's rows flat / kTileK + l * (kThreads / kTileK) at k offset flat % kTileK,
  // and B's column flat % kTile at k offsets flat / kTile + l * (kThreads / kTile).
  const int a_k = flat % kTileK, b_c = flat % kTile;
  typename Problem::RowCursor a_rows[kLoads];
  bool a_in[kLoads];
  for (int l = 0; l < kLoads; ++l) {
    const int64_t r = row0 + flat / kTileK + l * (kThreads / kTileK);
    a_in[l] = r < s.rows;
    a_rows[l] = a_in[l] ? prob.a_row(b, r) : typename Problem::RowCursor{};
  }
  const bool b_in = col0 + b_c < s.cols;
  const typename Problem::ColCursor b_cursor =
      b_in ? prob.b_col(b, col0 + b_c) : typename Problem::ColCursor{};

  for (int64_t k0 = 0; k0 < s.K; k0 += kTileK) {
    EMU_BUDGET_BEGIN("tile", kTileK * kPer * kPer);
    // Outside the grid or past K: 0 (never stepped).
    for (int l = 0; l < kLoads; ++l) {
      const int64_t ka = k0 + a_k;
      a_tile[a_k][flat / kTileK + l * (kThreads / kTileK)] =
          a_in[l] && ka < s.K ? prob.a_at(a_rows[l], ka) : 0.0f;
      const int kb = flat / kTile + l * (kThreads / kTile);
      b_tile[kb][b_c] = b_in && k0 + kb < s.K ? prob.b_at(b_cursor, k0 + kb) : 0.0f;
    }
    __syncthreads();
    const int64_t kn = s.K - k0 < kTileK ? s.K - k0 : kTileK;
    if constexpr (Path::kUnroll) {
      if (kn == kTileK) {  // a whole tile: a fixed trip count the compiler unrolls
#pragma unroll
        for (int kk = 0; kk < kTileK; ++kk)
          tile_steps<Problem>(p, path, state, draw, s.K, k0, kk, a_tile, b_tile);
      } else {
        EMU_BUDGET_SLOW_BEGIN();  // the last, partial tile
        for (int kk = 0; kk < kn; ++kk)
          tile_steps<Problem>(p, path, state, draw, s.K, k0, kk, a_tile, b_tile);
        EMU_BUDGET_END("slow");
      }
    } else {
      for (int kk = 0; kk < kn; ++kk) tile_steps<Problem>(p, path, state, draw, s.K, k0, kk, a_tile, b_tile);
    }
    __syncthreads();  // the next tile overwrites what others may still read
    EMU_BUDGET_END("tile");
  }

  for (int i = 0; i < kPer; ++i)
    for (int j = 0; j < kPer; ++j) {
      const int64_t r = row0 + ty + kThreadsSide * i, col = col0 + tx + kThreadsSide * j;
      if (r < s.rows && col < s.cols)
        s.c[prob.out_index(b, r, col)] =
            static_cast<float>(path.finish(p, state[i][j], s.K, prob.bias(b, r, col), draw[i][j]));
    }
}

// Blocks (x: column tile, y: row tile, z: batch); grids larger than CUDA's y
// and z limits loop (a block's whole loop body is uniform, so its barriers are).
// a_tile has one padding column: the loads write a_tile[k][row] with k varying
// fastest across a warp, which would otherwise hit 2 banks 16 times each.
template <class Path, class Problem>
__global__ void __launch_bounds__(kThreads)
    mac_tile_kernel(MacPolicy p, Path path, Problem prob, TileShape s) {
  __shared__ float a_tile[kTileK][kTile + 1];  // a_tile[k][row]
  __shared__ float b_tile[kTileK][kTile];      // b_tile[k][col]
  const int64_t row_tiles = (s.rows + kTile - 1) / kTile;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int64_t b = blockIdx.z; b < s.batches; b += gridDim.z)
    for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y)
      mac_tile(p, path, prob, s, b, rt * kTile, col0, a_tile, b_tile);
}

template <class Path, class Problem>
void launch_path(const char* name, const MacPolicy& p, const Path& path, const Problem& prob,
                 const TileShape& s) {
  const auto tiles = [](int64_t n) { return (n + kTile - 1) / kTile; };
  const dim3 grid(static_cast<unsigned>(tiles(s.cols)),
                  static_cast<unsigned>(std::min<int64_t>(tiles(s.rows), kMaxGridYZ)),
                  static_cast<unsigned>(std::min<int64_t>(s.batches, kMaxGridYZ)));
  const std::string label = fmt::format("{}<{}>", name, Path::kName);
  gpu::launch(label.c_str(), mac_tile_kernel<Path, Problem>, grid, dim3(kThreadsSide, kThreadsSide), 0,
              stream(), p, path, prob, s);
}

// Runs prob's outputs (s.c, s.key set by the caller; sites filled in here)
// under `policy` on the fastest path that gives its bits. Nothing to do for an
// empty grid. `name` names the op's kernel in launch errors.
template <class Problem>
void launch_tiles(const char* name, const MacPolicy& policy, const Problem& prob, TileShape s) {
  if (s.rows <= 0 || s.cols <= 0 || s.batches <= 0) return;
  if ((s.cols + kTile - 1) / kTile > 0x7fffffff)
    throw std::invalid_argument(
        fmt::format("{}: {} output columns exceed the launch grid", current_op(), s.cols));
  const MacPolicy p = with_device_lut(policy);  // a multiplier table the kernel can read
  s.sites = mac_site_count(s.K, p.chunk);
  if (fp32_acc_path(p)) {
    if (is_plain_fp32(p.mul))
      launch_path(name, p, Fp32AccPath<Fp32Mul::Native>{FastRound(p.mul)}, prob, s);
    else
      launch_path(name, p, Fp32AccPath<Fp32Mul::Rounded>{FastRound(p.mul)}, prob, s);
  } else if (rounded_path(p)) {
    launch_path(name, p, RoundedPath{FastRound(p.mul), FastRound(p.acc)}, prob, s);
  } else {
    // split:auto / fp32f per-layer statistics (core/split_stats.h): counted on the device.
    const bool count = split_stats_counted(p);
    std::unique_ptr<DeviceArray<unsigned long long>> counts(count ? new DeviceArray<unsigned long long>(2)
                                                                  : nullptr);
    s.auto_counts = count ? counts->get() : nullptr;
    launch_path(name, p, GenericPath{}, prob, s);
    if (count) {
      unsigned long long n[2];
      copy_to_host(n, counts->get(), sizeof n);
      const uint64_t per = static_cast<uint64_t>(s.K);
      split_stats_add(p.stats_slot, SplitRangeCounts{n[0], n[1], n[0] * per, n[1] * per});
    }
  }
}

}  // namespace emu::EMU_CUDA_NS::tile
