// gemm (core/backend_ops_dense.h) on the device as a tiled kernel:
//   a (M,K), b (K,N), bias (N) or null -> c (M,N),
//   c[i][j] = mac_reduce(p, a[i,:], b[:,j], K, bias[j]) (numerics/mac.h), bit for bit.
//
// A block of 16x16 threads computes a 32x32 tile of c; each thread keeps the
// running MacState of its 2x2 outputs in registers (register blocking) while
// 32x16 tiles of a and b pass through shared memory. Every output still takes
// its K terms one by one in ascending k (mac_step), so tiling changes where
// operands come from, never the order or the roundings (docs/contract.md
// section 4). Output o = i*N + j draws at o * mac_site_count(K, chunk) + site.
//
// Paths, chosen per call from the policy like the CPU's (backends/cpu/gemm.h):
//   Generic  every policy: the state is mac_reduce's (binary64 values, exact
//            roundings through numerics/round.h), draws for :sr.
//   Fp32Acc  acc plain fp32, no chunks, no :sr, no table multiplier, and mul
//            plain fp32 or an IEEE format whose values are binary32 values
//            (not accumulator-only) rounded by FastRound: the accumulator is
//            a binary32 register, each product is R_mul(a b) as a binary32
//            value and each accumulation is one binary32 addition (__fadd_rn),
//            which is R_fp32 of the exact sum: the Generic path's bits. NaN
//            payloads may differ inside the sum, and R_out canonicalises them.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/device_lut.h"
#include "numerics/element_arith.h"
#include "numerics/fp32_ops.h"
#include "numerics/mac.h"
#include "numerics/philox.h"

namespace emu::EMU_CUDA_NS {
namespace {

constexpr int kTile = 32;                    // outputs per block side
constexpr int kTileK = 16;                   // k per shared-memory tile
constexpr int kThreadsSide = 16;             // threads per block side
constexpr int kPer = kTile / kThreadsSide;   // outputs per thread side (register blocking)

struct GemmArgs {
  const float* a;     // (M, K) row-major
  const float* b;     // (K, N) row-major
  const float* bias;  // (N) or null
  float* c;           // (M, N) row-major
  int64_t M, N, K;
  DrawKey key;
  uint64_t sites;     // mac_site_count(K, chunk)
};

// The draw of `site` of output o (only called under :sr).
struct OutputDraw {
  uint64_t seed, stream, base;
  EMU_HD uint32_t operator()(uint64_t site) const { return philox_draw(seed, stream, base + site); }
};

struct GenericPath {
  using State = MacState;
  EMU_HD void step(const MacPolicy& p, State& s, int64_t K, int64_t k, float a, float b, const OutputDraw& d) const {
    mac_step(p, s, K, k, a, b, d);
  }
  EMU_HD double finish(const MacPolicy& p, State& s, int64_t K, const float* bias, const OutputDraw& d) const {
    return mac_finish(p, s, K, bias, d);
  }
};

struct Fp32AccPath {
  struct State {
    float acc = 0.0f;  // +0
  };
  bool mul_fp32;       // mul is plain fp32: the product is one binary32 multiplication
  FastRound mul;       // else R_mul of the exact binary64 product
  EMU_HD void step(const MacPolicy&, State& s, int64_t, int64_t, float a, float b, const OutputDraw&) const {
    if (a == 0.0f || b == 0.0f) return;  // zero operands are skipped, as in mac_step
    const float prod =
        mul_fp32 ? fp32::mul(a, b) : static_cast<float>(mul(static_cast<double>(a) * static_cast<double>(b)));
    s.acc = fp32::add(s.acc, prod);
  }
  EMU_HD double finish(const MacPolicy& p, State& s, int64_t K, const float* bias, const OutputDraw& d) const {
    MacState m;
    m.acc = s.acc;
    return mac_finish(p, m, K, bias, d);
  }
};

// One 32x32 tile of c per block of 16x16 threads; thread (tx, ty) owns rows
// ty + 16 i and columns tx + 16 j (i, j < 2), so neighbouring threads read
// neighbouring shared-memory columns.
template <class Path>
__global__ void __launch_bounds__(kThreadsSide* kThreadsSide) gemm_kernel(MacPolicy p, Path path, GemmArgs g) {
  __shared__ float a_tile[kTileK][kTile];  // a_tile[k][row]
  __shared__ float b_tile[kTileK][kTile];  // b_tile[k][col]
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile, col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int flat = ty * kThreadsSide + tx;

  typename Path::State state[kPer][kPer];
  OutputDraw draw[kPer][kPer];
  for (int i = 0; i < kPer; ++i)
    for (int j = 0; j < kPer; ++j) {
      const uint64_t o = static_cast<uint64_t>(row0 + ty + kThreadsSide * i) * static_cast<uint64_t>(g.N) +
                         static_cast<uint64_t>(col0 + tx + kThreadsSide * j);
      draw[i][j] = OutputDraw{g.key.seed, g.key.stream, o * g.sites};
    }

  for (int64_t k0 = 0; k0 < g.K; k0 += kTileK) {
    // 512 elements of each tile, two per thread; outside the matrices: 0 (never stepped).
    for (int l = flat; l < kTile * kTileK; l += kThreadsSide * kThreadsSide) {
      const int r = l / kTileK, ka = l % kTileK;
      const int64_t ga = row0 + r, gka = k0 + ka;
      a_tile[ka][r] = ga < g.M && gka < g.K ? g.a[ga * g.K + gka] : 0.0f;
      const int kb = l / kTile, cb = l % kTile;
      const int64_t gkb = k0 + kb, gb = col0 + cb;
      b_tile[kb][cb] = gkb < g.K && gb < g.N ? g.b[gkb * g.N + gb] : 0.0f;
    }
    __syncthreads();
    const int64_t kn = g.K - k0 < kTileK ? g.K - k0 : kTileK;
    for (int kk = 0; kk < kn; ++kk)
      for (int i = 0; i < kPer; ++i)
        for (int j = 0; j < kPer; ++j)
          path.step(p, state[i][j], g.K, k0 + kk, a_tile[kk][ty + kThreadsSide * i], b_tile[kk][tx + kThreadsSide * j],
                    draw[i][j]);
    __syncthreads();  // the next tile overwrites what others may still read
  }

  for (int i = 0; i < kPer; ++i)
    for (int j = 0; j < kPer; ++j) {
      const int64_t r = row0 + ty + kThreadsSide * i, col = col0 + tx + kThreadsSide * j;
      if (r < g.M && col < g.N)
        g.c[r * g.N + col] = static_cast<float>(path.finish(p, state[i][j], g.K, g.bias ? g.bias + col : nullptr,
                                                            draw[i][j]));
    }
}

bool fp32_acc_path(const MacPolicy& p) {
  if (!is_plain_fp32(p.acc) || p.chunk != 0 || is_stochastic(p.out) || p.mul_exact) return false;
  if (has_approx_mul(p.lut)) return false;  // table products: the Generic path
  const Format& m = p.mul;
  return is_plain_fp32(m) || (m.family == Family::Ieee && !m.accumulator_only && fast_ieee_d_supported(m));
}

}  // namespace

void CudaBackend::gemm(const MacPolicy& policy, const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                       DrawKey key) {
  OpScope scope("gemm");
  const MacPolicy p = with_device_lut(policy);  // a multiplier table the kernel can read
  if (a.ndim() != 2 || b.ndim() != 2 || c.ndim() != 2 || a.dim(1) != b.dim(0) || c.dim(0) != a.dim(0) ||
      c.dim(1) != b.dim(1) || (bias && bias->numel() != b.dim(1)))
    throw std::invalid_argument(fmt::format("gemm: a {} x b {} -> c {}{}", shape_string(a.shape()),
                                            shape_string(b.shape()), shape_string(c.shape()),
                                            bias ? " with bias " + shape_string(bias->shape()) : ""));
  float* cp = contiguous_data(c, "c");
  const int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
  if (M == 0 || N == 0) return;
  const Tensor A = a.contiguous(), B = b.contiguous();
  const Tensor bias_c = bias ? bias->contiguous() : Tensor();
  GemmArgs g{view_of(A).data, view_of(B).data, bias ? view_of(bias_c).data : nullptr, cp, M, N, K, key,
             mac_site_count(K, p.chunk)};
  const dim3 grid(static_cast<unsigned>((N + kTile - 1) / kTile), static_cast<unsigned>((M + kTile - 1) / kTile));
  const dim3 block(kThreadsSide, kThreadsSide);
  if (fp32_acc_path(p)) {
    Fp32AccPath path{is_plain_fp32(p.mul), FastRound(p.mul)};
    gpu::launch("gemm_kernel<Fp32AccPath>", gemm_kernel<Fp32AccPath>, grid, block, 0, stream(), p, path, g);
  } else {
    gpu::launch("gemm_kernel<GenericPath>", gemm_kernel<GenericPath>, grid, block, 0, stream(), p, GenericPath{}, g);
  }
  // Contiguous temporaries go back to the cache now: one stream orders their reuse after this kernel.
}

}  // namespace emu::EMU_CUDA_NS
