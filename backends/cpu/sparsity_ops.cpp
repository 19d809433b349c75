// N:M masks on the CPU (core/backend_ops_sparsity.h defines the ops). Each row
// of the read layout is independent, so rows are split over threads and the
// result does not depend on the thread count.
#include <algorithm>

#include "backends/cpu/cpu_backend.h"
#include "core/sparsity_checks.h"
#include "core/tensor.h"
#include "numerics/nm_rank.h"

namespace emu {

// s: (layout.numel()) -> mask: same shape, 1.0f kept / 0.0f dropped.
void CpuBackend::nm_mask(const NmParams& p, const Tensor& s, Tensor& mask, DrawKey key) {
  const ReadLayout& l = p.layout;
  check_nm_mask(p, s, mask);
  Tensor sc = s.contiguous();
  const float* sp = sc.data();
  float* mp = mask.data();
  const int64_t grain = std::max<int64_t>(1, kGrainElements / l.len);
  parallel_for(l.rows(), threads_, grain, [&](int64_t lo, int64_t hi) {
    uint64_t keys[kNmMaxGroup];
    int64_t idx[kNmMaxGroup];
    for (int64_t r = lo; r < hi; ++r) {
      for (int64_t g0 = 0; g0 < l.len; g0 += p.m) {
        const int size = static_cast<int>(std::min<int64_t>(p.m, l.len - g0));
        for (int j = 0; j < size; ++j) {
          idx[j] = l.index(r, g0 + j);
          switch (p.score) {
            case NmScoreSource::Magnitude:
              keys[j] = nm_magnitude_key(sp[idx[j]]);
              break;
            case NmScoreSource::Given:
              keys[j] = nm_float_key(sp[idx[j]]);
              break;
            case NmScoreSource::Random:
              keys[j] = nm_random_key(key.seed, key.stream, static_cast<uint64_t>(idx[j]));
              break;
          }
        }
        for (int j = 0; j < size; ++j)
          mp[idx[j]] = nm_keeps([&](int i) { return keys[i]; }, size, j, p.n) ? 1.0f : 0.0f;
      }
    }
  });
}

// x, mask -> y: y[i] = mask[i] != 0 ? x[i] : +0.
void CpuBackend::apply_mask(const Tensor& x, const Tensor& mask, Tensor& y) {
  check_apply_mask(x, mask, y);
  Tensor xc = x.contiguous(), mc = mask.contiguous();
  const float* xp = xc.data();
  const float* mp = mc.data();
  float* yp = y.data();
  parallel_for(x.numel(), threads_, int64_t{1} << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) yp[i] = mp[i] != 0.0f ? xp[i] : 0.0f;
  });
}

}  // namespace emu
