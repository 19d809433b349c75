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
// another, so there is no reduction across threads and no atomic. Under plain
// fp32 (mul and acc) the chain is one binary32 product and sum per entry
// (spmm_fp32_kernel), the same bits.
//
// spmm_transposed is spmm of csr_transpose(a). The CSR index arrays live on the
// host (core/csr.h), so the transpose's structure is built there by
// csr_transpose_unchecked, a sequential counting sort (deterministic); that
// function leaves the values of a device matrix undefined and returns, per
// entry of the transpose, the index of its entry in a: the values are gathered
// on the device through those indices. The index arrays of a matrix and of its
// transpose are uploaded once and kept (CsrCache), not uploaded per call.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
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
// State: MacSums, or MacState when the policy forms fused runs.
template <class State>
__global__ void spmm_kernel(const __grid_constant__ MacPolicy p, const SpmmArgs s) {
  EMU_GRID_STRIDE_LOOP(o, s.rows * s.n) {
    const int64_t i = o / s.n, j = o % s.n;
    const int64_t begin = s.row_ptr[i], K = s.row_ptr[i + 1] - begin;
    const OutputDraw draw{s.key.seed, s.key.stream, static_cast<uint64_t>(o) * s.sites};
    State state;
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
      EMU_BUDGET_BEGIN(kTile, 1);
      mac_step(p, state, K, q, s.values[begin + q], s.b[static_cast<int64_t>(s.col_idx[begin + q]) * s.n + j],
               draw);
      EMU_BUDGET_END(kTile);
    }
    s.c[o] = static_cast<float>(mac_finish(p, state, K, s.bias ? s.bias + j : nullptr, draw));
  }
}

// Whether spmm_fp32_kernel gives p's bits: mul and acc plain fp32, no chunks, no runs, no draws.
bool spmm_fp32_policy(const MacPolicy& p) {
  return !p.mul_exact && is_plain_fp32(p.mul) && is_plain_fp32(p.acc) && !custom_mul(p) && p.chunk == 0 &&
         p.fused == 0 && !is_stochastic(p.out);
}

// spmm_kernel's bits when spmm_fp32_policy(p): each term one binary32 product and one binary32
// sum (R_fp32 of the exact results), a term with a zero operand skipped by a select (Inf * 0
// must not reach the sum), the result rounded by mac_finish. Without fp32::'s NaN
// canonicalisation, as the tile kernel's Fp32NativePath: mac_finish maps every NaN to the one
// canonical NaN.
__global__ void spmm_fp32_kernel(const __grid_constant__ MacPolicy p, const SpmmArgs s) {
  EMU_GRID_STRIDE_LOOP(o, s.rows * s.n) {
    const int64_t i = o / s.n, j = o % s.n;
    const int64_t begin = s.row_ptr[i], end = s.row_ptr[i + 1];
    const float* bj = s.b + j;
    float acc = 0.0f;  // +0
    for (int64_t q = begin; q < end; ++q) {
      EMU_BUDGET_BEGIN(kTile, 1);
      const float a = s.values[q], b = bj[static_cast<int64_t>(s.col_idx[q]) * s.n];
      const float sum = __fadd_rn(acc, __fmul_rn(a, b));
      acc = a == 0.0f || b == 0.0f ? acc : sum;
      EMU_BUDGET_END(kTile);
    }
    MacSums m;
    m.acc = acc;
    // spmm_fp32_policy: nothing draws (acc plain fp32, out without :sr).
    s.c[o] = static_cast<float>(mac_finish(p, m, end - begin, s.bias ? s.bias + j : nullptr, NoDraw{}));
  }
}

// out[q] = in[source[q]]: the transpose's values, entry by entry.
__global__ void gather_kernel(const float* in, const int64_t* source, float* out, int64_t n) {
  EMU_GRID_STRIDE_LOOP(q, n) { out[q] = in[source[q]]; }
}

// The index arrays of the CSR matrices spmm has seen, on the device. A layer
// multiplies by the same adjacency every step (GCN: every epoch, forward and
// backward), so its structure is uploaded once, and its transpose built and
// uploaded once, not per call. A matrix is found by the contents of its index
// arrays (a hash, then an element-by-element comparison with the kept host
// copy), never by an address that a later matrix could reuse; values are not
// part of it (they are a device tensor, read per call). The few most recent
// matrices are kept.
class CsrCache {
 public:
  struct Device {
    int64_t rows = 0, cols = 0, max_row = 0;  // max_row: the most entries of a row
    std::vector<int64_t> row_ptr;             // host copies, for the comparison
    std::vector<int32_t> col_idx;
    std::unique_ptr<DeviceArray<int64_t>> d_row_ptr;
    std::unique_ptr<DeviceArray<int32_t>> d_col_idx;
  };
  struct Entry {
    uint64_t hash = 0;
    Device a;
    // The transpose's structure and, per entry of it, the index of its entry in a
    // (csr_transpose_unchecked); built on first use.
    std::unique_ptr<Device> t;
    std::unique_ptr<DeviceArray<int64_t>> t_source;
  };

  // The entry of a's structure (made and uploaded on a miss). The caller's
  // reference keeps it alive when a later call evicts it.
  std::shared_ptr<Entry> find(const CsrMatrix& a) {
    const uint64_t h = hash(a);
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      const Entry& e = **it;
      if (e.hash == h && e.a.rows == a.rows && e.a.cols == a.cols && e.a.row_ptr == a.row_ptr &&
          e.a.col_idx == a.col_idx) {
        entries_.splice(entries_.begin(), entries_, it);  // most recent first
        return entries_.front();
      }
    }
    auto e = std::make_shared<Entry>();
    e->hash = h;
    fill(e->a, a);
    entries_.push_front(e);
    if (entries_.size() > kKept) entries_.pop_back();
    return e;
  }

  // The transpose of e's matrix `a` (built on first use).
  const Device& transpose(Entry& e, const CsrMatrix& a) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!e.t) {
      std::vector<int64_t> source;
      const CsrMatrix t = csr_transpose_unchecked(a, &source);
      auto d = std::make_unique<Device>();
      fill(*d, t);
      e.t_source = upload(source);
      e.t = std::move(d);
    }
    return *e.t;
  }

  // Never destroyed (a static's destructor could run after the CUDA runtime's
  // teardown); its device arrays are freed at exit instead, before the
  // allocator's cache is emptied (allocator.cu: that hook is registered at the
  // first allocation, so it runs after this one), so that a leak check reports none.
  static CsrCache& instance() {
    static CsrCache* cache = new CsrCache;
    static const bool at_exit = std::atexit([] { instance().clear(); }) == 0;
    (void)at_exit;
    return *cache;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
  }

 private:
  static constexpr size_t kKept = 8;

  template <class T>
  static std::unique_ptr<DeviceArray<T>> upload(const std::vector<T>& v) {
    // At least one element, so that an empty matrix still has valid pointers.
    auto d = std::make_unique<DeviceArray<T>>(std::max<size_t>(v.size(), 1));
    if (!v.empty()) copy_to_device(d->get(), v.data(), v.size() * sizeof(T));
    return d;
  }
  static void fill(Device& d, const CsrMatrix& a) {
    d.rows = a.rows;
    d.cols = a.cols;
    d.row_ptr = a.row_ptr;
    d.col_idx = a.col_idx;
    for (int64_t i = 0; i < a.rows; ++i) d.max_row = std::max(d.max_row, a.row_ptr[i + 1] - a.row_ptr[i]);
    d.d_row_ptr = upload(a.row_ptr);
    d.d_col_idx = upload(a.col_idx);
  }
  // FNV-1a over the shape and both index arrays, one element at a time (a matrix
  // of 50,000 entries takes some tens of microseconds per call).
  static uint64_t hash(const CsrMatrix& a) {
    uint64_t h = 1469598103934665603ull;
    const auto mix = [&h](uint64_t x) { h = (h ^ x) * 1099511628211ull; };
    mix(static_cast<uint64_t>(a.rows));
    mix(static_cast<uint64_t>(a.cols));
    for (const int64_t v : a.row_ptr) mix(static_cast<uint64_t>(v));
    for (const int32_t v : a.col_idx) mix(static_cast<uint32_t>(v));
    return h;
  }

  std::mutex mutex_;
  std::list<std::shared_ptr<Entry>> entries_;
};

// c = a b (+ bias) for the matrix structure `a` (on the device) whose values are
// the device array `values`; b (a.cols, n) any view, c (a.rows, n) contiguous.
void run_spmm(const MacPolicy& policy, const CsrCache::Device& a, const float* values, const Tensor& b,
              const Tensor* bias, Tensor& c, DrawKey key) {
  float* cp = contiguous_data(c, "c");
  const int64_t n = b.dim(1);
  if (a.rows == 0 || n == 0) return;
  const MacPolicy p = with_device_lut(policy);  // a multiplier table the kernel can read
  const Tensor bc = b.contiguous();
  const Tensor bias_c = bias ? bias->contiguous() : Tensor();
  const bool count = split_stats_counted(p);  // core/split_stats.h
  std::unique_ptr<DeviceArray<unsigned long long>> counts(count ? new DeviceArray<unsigned long long>(4)
                                                                : nullptr);
  const SpmmArgs s{a.d_row_ptr->get(),
                   a.d_col_idx->get(),
                   values,
                   contiguous_data(bc, "b"),
                   bias ? contiguous_data(bias_c, "bias") : nullptr,
                   cp,
                   a.rows,
                   n,
                   key,
                   mac_site_count(a.max_row, p.chunk),
                   count ? counts->get() : nullptr};
  if (spmm_fp32_policy(p))
    launch_each("spmm_fp32_kernel", spmm_fp32_kernel, a.rows * n, p, s);
  else if (p.fused > 0)
    launch_each("spmm_kernel", spmm_kernel<MacState>, a.rows * n, p, s);
  else
    launch_each("spmm_kernel", spmm_kernel<MacSums>, a.rows * n, p, s);
  if (count) {
    unsigned long long h[4];
    copy_to_host(h, counts->get(), sizeof h);
    split_stats_add(p.stats_slot, SplitRangeCounts{h[0], h[2], h[1], h[3]});
  }
}

}  // namespace

// a (R x K CSR), b (K, N), bias (N) or null -> c (R, N)
void CudaBackend::spmm(const MacPolicy& p, const CsrMatrix& a, const Tensor& b, const Tensor* bias, Tensor& c,
                       DrawKey key) {
  OpScope scope("spmm");
  check_spmm(a, b, bias, c);
  const Tensor values = a.values.contiguous();
  const std::shared_ptr<CsrCache::Entry> e = CsrCache::instance().find(a);
  run_spmm(p, e->a, contiguous_data(values, "a.values"), b, bias, c, key);
}

// a (R x K CSR), b (R, N) -> c (K, N) = a^T b
void CudaBackend::spmm_transposed(const MacPolicy& p, const CsrMatrix& a, const Tensor& b, Tensor& c,
                                  DrawKey key) {
  OpScope scope("spmm_transposed");
  check_spmm_transposed(a, b, c);
  const Tensor values = a.values.contiguous();
  const float* vp = contiguous_data(values, "a.values");
  // The transpose's structure (cached); its values gathered from a's on the
  // device, entry q from a's source[q].
  CsrCache& cache = CsrCache::instance();
  const std::shared_ptr<CsrCache::Entry> e = cache.find(a);
  const CsrCache::Device& t = cache.transpose(*e, a);
  const int64_t nnz = a.nnz();
  DeviceArray<float> t_values(static_cast<size_t>(std::max<int64_t>(nnz, 1)));
  launch_each("gather_kernel", gather_kernel, nnz, vp, static_cast<const int64_t*>(e->t_source->get()),
              t_values.get(), nnz);
  run_spmm(p, t, t_values.get(), b, nullptr, c, key);
}

}  // namespace emu::EMU_CUDA_NS
