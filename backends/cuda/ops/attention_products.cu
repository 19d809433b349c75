// The per-head products of multi-head attention on the device
// (EMU_OPS_ATTENTION_PRODUCTS, core/backend_ops_attention.h), as batched
// GEMMs through the tile kernel of gemm_tile.h, one batch per (n, h):
//
//   attention_scores:             x (N,T,H*D), y (N,S,H*D) -> s (N,H,T,S)
//       s[n,h,t,j]   = reduction over d ascending of x[n,t,h*D+d] y[n,j,h*D+d]
//   attention_context:            a (N,H,T,S), y (N,S,H*D) -> c (N,T,H*D)
//       c[n,t,h*D+d] = reduction over j ascending of a[n,h,t,j] y[n,j,h*D+d]
//   attention_context_transposed: a (N,H,T,S), x (N,T,H*D) -> c (N,S,H*D)
//       c[n,j,h*D+d] = reduction over t ascending of a[n,h,t,j] x[n,t,h*D+d]
//
// The strides read each head's operand in place (the CPU packs the transposed
// one: the same elements in the same k order), and every output draws at its
// row-major index in the whole result (stage 0: the key as given), as the CPU's
// per-output loop does under :sr. The kernel's paths give mac_reduce's bits.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/gemm_strided.h"
#include "backends/cuda/ops/gemm_tile.h"
#include "core/attention_checks.h"

namespace emu::EMU_CUDA_NS {
namespace {

using Dims = AttentionDims;  // checked by core/attention_checks.h

// The (N*H) batched product with the given strides into c.
void run_heads(const char* kernel, const MacPolicy& p, const Dims& d, const tile::StridedProduct& prob,
               float* c, int64_t rows, int64_t cols, int64_t K, DrawKey key) {
  tile::TileShape s;
  s.rows = rows;
  s.cols = cols;
  s.K = K;
  s.batches = d.N * d.H;
  s.c = c;
  s.key = key;
  tile::launch_tiles(kernel, p, prob, s);
}

}  // namespace

// x (N,T,H*D), y (N,S,H*D) -> s (N,H,T,S); rows t, columns j, k = d
void CudaBackend::attention_scores(const MacPolicy& p, int64_t heads, const Tensor& x, const Tensor& y,
                                   Tensor& s, DrawKey key) {
  OpScope scope("attention_scores");
  const Dims d = check_attention_scores(heads, x, y, s);
  float* sp = contiguous_data(s, "s");
  if (s.numel() == 0) return;
  const Tensor X = x.contiguous(), Y = y.contiguous();
  const int64_t E = d.E();
  tile::StridedProduct prob;
  prob.heads = d.H;
  prob.a = tile::Strides{view_of(X).data, d.T * E, d.D, E, 1};  // x[n, t, h*D + d]
  prob.b = tile::Strides{view_of(Y).data, d.S * E, d.D, E, 1};  // y[n, j, h*D + d]
  prob.c = tile::Strides{nullptr, d.H * d.T * d.S, d.T * d.S, d.S, 1};
  run_heads("attention_scores_kernel", p, d, prob, sp, d.T, d.S, d.D, key);
}

// a (N,H,T,S), y (N,S,H*D) -> c (N,T,H*D); rows t, columns d, k = j
void CudaBackend::attention_context(const MacPolicy& p, int64_t heads, const Tensor& a, const Tensor& y,
                                    Tensor& c, DrawKey key) {
  OpScope scope("attention_context");
  const Dims d = check_attention_context(heads, a, y, c);
  const int64_t E = d.E();
  float* cp = contiguous_data(c, "c");
  if (c.numel() == 0) return;
  const Tensor A = a.contiguous(), Y = y.contiguous();
  tile::StridedProduct prob;
  prob.heads = d.H;
  prob.a = tile::Strides{view_of(A).data, d.H * d.T * d.S, d.T * d.S, d.S, 1};  // a[n, h, t, j]
  prob.b = tile::Strides{view_of(Y).data, d.S * E, d.D, 1, E};                  // y[n, j, h*D + d]
  prob.c = tile::Strides{nullptr, d.T * E, d.D, E, 1};
  run_heads("attention_context_kernel", p, d, prob, cp, d.T, d.D, d.S, key);
}

// a (N,H,T,S), x (N,T,H*D) -> c (N,S,H*D); rows j, columns d, k = t
void CudaBackend::attention_context_transposed(const MacPolicy& p, int64_t heads, const Tensor& a,
                                               const Tensor& x, Tensor& c, DrawKey key) {
  OpScope scope("attention_context_transposed");
  const Dims d = check_attention_context_transposed(heads, a, x, c);
  const int64_t E = d.E();
  float* cp = contiguous_data(c, "c");
  if (c.numel() == 0) return;
  const Tensor A = a.contiguous(), X = x.contiguous();
  tile::StridedProduct prob;
  prob.heads = d.H;
  prob.a = tile::Strides{view_of(A).data, d.H * d.T * d.S, d.T * d.S, 1, d.S};  // a[n, h, t, j]
  prob.b = tile::Strides{view_of(X).data, d.T * E, d.D, 1, E};                  // x[n, t, h*D + d]
  prob.c = tile::Strides{nullptr, d.S * E, d.D, E, 1};
  run_heads("attention_context_transposed_kernel", p, d, prob, cp, d.S, d.D, d.T, key);
}

}  // namespace emu::EMU_CUDA_NS
