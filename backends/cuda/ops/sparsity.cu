// N:M masks on the device (core/backend_ops_sparsity.h), with the keys and the
// ranking rule of numerics/nm_rank.h, the CPU's definitions
// (backends/cpu/sparsity_ops.cpp).
//
// nm_mask runs two element-wise passes: every element's score key (at its flat
// index, as the CPU keys it), then every element's rank within its group, read
// from the keys of the group's members. Each element is decided alone from
// integer comparisons, so neither the launch shape nor the order of threads can
// change a mask bit. apply_mask is a per-element select.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/scratch.h"
#include "core/sparsity_checks.h"
#include "numerics/nm_rank.h"

namespace emu::EMU_CUDA_NS {
namespace {

// keys[i] = the score key of element i (flat index of the contiguous scores).
__global__ void nm_keys_kernel(NmScoreSource score, const float* s, uint64_t* keys, int64_t n, DrawKey key) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    switch (score) {
      case NmScoreSource::Magnitude:
        keys[i] = nm_magnitude_key(s[i]);
        break;
      case NmScoreSource::Given:
        keys[i] = nm_float_key(s[i]);
        break;
      case NmScoreSource::Random:
        keys[i] = nm_random_key(key.seed, key.stream, static_cast<uint64_t>(i));
        break;
    }
  }
}

// mask[i] = 1 if element i (element k of row r) is kept in its group of M, else 0.
__global__ void nm_select_kernel(ReadLayout l, int n_keep, int m, const uint64_t* keys, float* mask,
                                 int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t plane = l.len * l.inner;
    const int64_t o = i / plane, k = (i % plane) / l.inner, r = o * l.inner + i % l.inner;
    const int64_t g0 = k / m * m;
    const int size = static_cast<int>(l.len - g0 < m ? l.len - g0 : m);
    const bool keep =
        nm_keeps([&](int q) { return keys[l.index(r, g0 + q)]; }, size, static_cast<int>(k - g0), n_keep);
    mask[i] = keep ? 1.0f : 0.0f;
  }
}

// y[i] = mask[i] != 0 ? x[i] : +0: the CPU's float test written on the bits
// (a mask is nonzero iff its magnitude bits are: NaN masks keep, -0 masks drop),
// so no flush-to-zero mode can drop a subnormal mask value.
__global__ void apply_mask_kernel(const float* x, const float* mask, float* y, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) { y[i] = (float_bits(mask[i]) & 0x7fffffffu) != 0 ? x[i] : 0.0f; }
}

}  // namespace

// s: (layout.numel()), any view -> mask: same shape, contiguous, 1.0f kept / 0.0f dropped.
void CudaBackend::nm_mask(const NmParams& p, const Tensor& s, Tensor& mask, DrawKey key) {
  OpScope scope("nm_mask");
  const ReadLayout& l = p.layout;
  check_nm_mask(p, s, mask);
  const int64_t n = s.numel();
  if (n == 0) return;
  // Scores at their flat indices, as the CPU reads them (a view is copied first).
  const Tensor sc = s.contiguous();
  const float* sp = contiguous_data(sc, "s");
  float* mp = contiguous_data(mask, "mask");
  DeviceArray<uint64_t> keys(static_cast<size_t>(n));
  launch_each("nm_keys_kernel", nm_keys_kernel, n, p.score, sp, keys.get(), n, key);
  launch_each("nm_select_kernel", nm_select_kernel, n, l, p.n, p.m, static_cast<const uint64_t*>(keys.get()),
              mp, n);
}

// x, mask (same numel, any views) -> y (contiguous; may be x)
void CudaBackend::apply_mask(const Tensor& x, const Tensor& mask, Tensor& y) {
  OpScope scope("apply_mask");
  check_apply_mask(x, mask, y);
  const int64_t n = x.numel();
  if (n == 0) return;
  // Views are read from contiguous copies, as the CPU reads them: y may be x
  // itself (each element is read before it is written, by the same thread).
  const Tensor xc = x.contiguous(), mc = mask.contiguous();
  launch_each("apply_mask_kernel", apply_mask_kernel, n, static_cast<const float*>(contiguous_data(xc, "x")),
              static_cast<const float*>(contiguous_data(mc, "mask")), contiguous_data(y, "y"), n);
}

}  // namespace emu::EMU_CUDA_NS
