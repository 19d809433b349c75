// gemm (core/backend_ops_dense.h) on the device:
//   a (M,K), b (K,N), bias (N) or null -> c (M,N),
//   c[i][j] = mac_reduce(p, a[i,:], b[:,j], K, bias[j]) (numerics/mac.h), bit for bit.
//
// The tile kernel of gemm_tile.h (32x32 outputs per block of 16x16 threads,
// 2x2 register blocking, every output's K terms one by one in ascending k) with
// plain row-major operands: one batch, A(i, k) = a[i*K + k], B(k, j) = b[k*N + j].
// Output o = i*N + j draws at o * mac_site_count(K, chunk) + site. The
// convolutions and the attention products run the same kernel with their own
// operand loaders (conv.cu, attention_products.cu).
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/gemm_strided.h"
#include "backends/cuda/ops/gemm_tile.h"
#include "core/dense_checks.h"

namespace emu::EMU_CUDA_NS {

void CudaBackend::gemm(const MacPolicy& policy, const Tensor& a, const Tensor& b, const Tensor* bias,
                       Tensor& c, DrawKey key) {
  OpScope scope("gemm");
  check_gemm(a, b, bias, c);
  float* cp = contiguous_data(c, "c");
  const int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
  if (M == 0 || N == 0) return;
  const Tensor A = a.contiguous(), B = b.contiguous();
  const Tensor bias_c = bias ? bias->contiguous() : Tensor();
  tile::StridedProduct prob;
  prob.a = tile::Strides{view_of(A).data, 0, 0, K, 1};
  prob.b = tile::Strides{view_of(B).data, 0, 0, 1, N};
  prob.c = tile::Strides{nullptr, 0, 0, N, 1};
  prob.bias_base = bias ? view_of(bias_c).data : nullptr;
  tile::TileShape s;
  s.rows = M;
  s.cols = N;
  s.K = K;
  s.c = cp;
  s.key = key;
  tile::launch_tiles("gemm_kernel", policy, prob, s);
  // Contiguous temporaries go back to the cache now: one stream orders their reuse after this kernel.
}

}  // namespace emu::EMU_CUDA_NS
