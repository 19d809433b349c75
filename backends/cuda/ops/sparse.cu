// CSR spmm and spmm_transposed (core/backend_ops_sparse.h) on the device:
//   spmm: c[i][j] = mac_reduce(p, terms of row i, bias[j]) over the row's stored
//         entries in ascending column order (docs/contract.md section 4.2).
//
// Rows run in parallel, one thread per output (i, j) (grid-stride over
// o = i*N + j, so a warp's threads mostly share a row and read neighbouring
// columns of b). Each output is one dependent chain: mac_step over the row's
// K_i entries in stored order, then mac_finish, the definition itself
// (numerics/mac.h), drawing at o * mac_site_count(Kmax, chunk) + site as the
// CPU does (backends/cpu/sparse_ops.cpp). No output shares a thread's work with
// another, so there is no reduction across threads and no atomic.
//
// spmm_transposed is spmm of csr_transpose(a). The CSR index arrays live on the
// host (core/csr.h), so the transpose's structure is built there by
// csr_transpose_unchecked, a sequential counting sort (deterministic); that
// function leaves the values of a device matrix undefined and returns, per
// entry of the transpose, the index of its entry in a: the values are gathered
// on the device through those indices. The index arrays of either product are
// uploaded for the call.
#include <algorithm>
#include <memory>
#include <vector>

#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/device_lut.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/ptx_marks.h"
#include "backends/cuda/ops/scratch.h"
#include "core/csr.h"
#include "core/sparse_checks.h"
#include "core/split_stats.h"
#include "numerics/mac.h"
#include "numerics/philox.h"

namespace emu::EMU_CUDA_NS {
namespace {

struct SpmmArgs {
  const int64_t* row_ptr;  // rows + 1
  const int32_t* col_idx;  // nnz, ascending within each row
  const float* values;     // nnz
  const float* b;          // (cols, n) row-major
  const float* bias;       // (n) or null
  float* c;                // (rows, n) row-major
  int64_t rows, n;
  DrawKey key;
  uint64_t sites;  // mac_site_count(Kmax, chunk): the draw stride between outputs
  // split:auto / fp32f with a statistics slot: in-range outputs, their terms, the others, their terms.
  unsigned long long* auto_counts;
};

// The draw of `site` of one output (only called under :sr).
struct OutputDraw {
  uint64_t seed, stream, base;
  EMU_HD uint32_t operator()(uint64_t site) const { return philox_draw(seed, stream, base + site); }
};

// c[o] for o = i*n + j: the row's K_i terms (values[e], b[col_idx[e]][j]) in stored order.
__global__ void spmm_kernel(MacPolicy p, SpmmArgs s) {
  EMU_GRID_STRIDE_LOOP(o, s.rows * s.n) {
    const int64_t i = o / s.n, j = o % s.n;
    const int64_t begin = s.row_ptr[i], K = s.row_ptr[i + 1] - begin;
    const OutputDraw draw{s.key.seed, s.key.stream, static_cast<uint64_t>(o) * s.sites};
    MacState state;
    if (!p.mul_exact && (p.split == SplitMul::Auto || s.auto_counts)) {  // resolved from the output's terms
      bool in = true;
      for (int64_t q = 0; q < K; ++q)
        in = in && split_auto_in_range(s.values[begin + q]) &&
             split_auto_in_range(s.b[static_cast<int64_t>(s.col_idx[begin + q]) * s.n + j]);
      state.split = in ? SplitMul::Fp32F : SplitMul::Fp32B;  // read under split:auto only
      if (s.auto_counts) {
        const int f = in ? 0 : 2;
        atomicAdd(&s.auto_counts[f], 1ull);
        atomicAdd(&s.auto_counts[f + 1], static_cast<unsigned long long>(K));
      }
    }
    for (int64_t q = 0; q < K; ++q) {
      EMU_BUDGET_BEGIN("tile", 1);
      mac_step(p, state, K, q, s.values[begin + q], s.b[static_cast<int64_t>(s.col_idx[begin + q]) * s.n + j],
               draw);
      EMU_BUDGET_END("tile");
    }
    s.c[o] = static_cast<float>(mac_finish(p, state, K, s.bias ? s.bias + j : nullptr, draw));
  }
}

// out[q] = in[source[q]]: the transpose's values, entry by entry.
__global__ void gather_kernel(const float* in, const int64_t* source, float* out, int64_t n) {
  EMU_GRID_STRIDE_LOOP(q, n) { out[q] = in[source[q]]; }
}

// A host vector in a device array of its own (at least one element, so that
// an empty matrix still has valid pointers).
template <class T>
class Upload {
 public:
  explicit Upload(const std::vector<T>& v) : array_(std::max<size_t>(v.size(), 1)) {
    if (!v.empty()) copy_to_device(array_.get(), v.data(), v.size() * sizeof(T));
  }
  const T* get() const { return array_.get(); }

 private:
  DeviceArray<T> array_;
};

int64_t max_row_entries(const CsrMatrix& a) {
  int64_t m = 0;
  for (int64_t i = 0; i < a.rows; ++i) m = std::max(m, a.row_ptr[i + 1] - a.row_ptr[i]);
  return m;
}

// c = a b (+ bias) for a matrix whose structure is `a` and whose values are
// the device array `values`; b (a.cols, n) any view, c (a.rows, n) contiguous.
void run_spmm(const MacPolicy& policy, const CsrMatrix& a, const float* values, const Tensor& b,
              const Tensor* bias, Tensor& c, DrawKey key) {
  float* cp = contiguous_data(c, "c");
  const int64_t n = b.dim(1);
  if (a.rows == 0 || n == 0) return;
  const MacPolicy p = with_device_lut(policy);  // a multiplier table the kernel can read
  const Tensor bc = b.contiguous();
  const Tensor bias_c = bias ? bias->contiguous() : Tensor();
  const Upload<int64_t> row_ptr(a.row_ptr);
  const Upload<int32_t> col_idx(a.col_idx);
  const bool count = split_stats_counted(p);  // core/split_stats.h
  std::unique_ptr<DeviceArray<unsigned long long>> counts(count ? new DeviceArray<unsigned long long>(4)
                                                                : nullptr);
  const SpmmArgs s{row_ptr.get(),
                   col_idx.get(),
                   values,
                   contiguous_data(bc, "b"),
                   bias ? contiguous_data(bias_c, "bias") : nullptr,
                   cp,
                   a.rows,
                   n,
                   key,
                   mac_site_count(max_row_entries(a), p.chunk),
                   count ? counts->get() : nullptr};
  launch_each("spmm_kernel", spmm_kernel, a.rows * n, p, s);
  if (count) {
    unsigned long long h[4];
    copy_to_host(h, counts->get(), sizeof h);
    split_stats_add(p.stats_slot, SplitRangeCounts{h[0], h[2], h[1], h[3]});
  }
  // The uploads go back to the cache now: the one stream orders their reuse after this kernel.
}

}  // namespace

// a (R x K CSR), b (K, N), bias (N) or null -> c (R, N)
void CudaBackend::spmm(const MacPolicy& p, const CsrMatrix& a, const Tensor& b, const Tensor* bias, Tensor& c,
                       DrawKey key) {
  OpScope scope("spmm");
  check_spmm(a, b, bias, c);
  const Tensor values = a.values.contiguous();
  run_spmm(p, a, contiguous_data(values, "a.values"), b, bias, c, key);
}

// a (R x K CSR), b (R, N) -> c (K, N) = a^T b
void CudaBackend::spmm_transposed(const MacPolicy& p, const CsrMatrix& a, const Tensor& b, Tensor& c,
                                  DrawKey key) {
  OpScope scope("spmm_transposed");
  check_spmm_transposed(a, b, c);
  const Tensor values = a.values.contiguous();
  const float* vp = contiguous_data(values, "a.values");
  // The transpose's structure on the host; its values (undefined in t for a
  // device matrix) gathered from a's on the device, entry q from a's source[q].
  std::vector<int64_t> source;
  const CsrMatrix t = csr_transpose_unchecked(a, &source);
  const int64_t nnz = a.nnz();
  DeviceArray<float> t_values(static_cast<size_t>(std::max<int64_t>(nnz, 1)));
  {
    const Upload<int64_t> src(source);
    launch_each("gather_kernel", gather_kernel, nnz, vp, src.get(), t_values.get(), nnz);
  }
  run_spmm(p, t, t_values.get(), b, nullptr, c, key);
}

}  // namespace emu::EMU_CUDA_NS
