// Helpers shared by the CPU row-wise ops (softmax, masked attention softmax,
// losses, sequence ops) and the direct (non-GEMM) reductions of the convolution
// and sparse ops: how many rows a thread task takes and the per-output
// reduction loop. The row reductions' arithmetic (policies, native fast paths,
// draws) is numerics/row_reduce.h, shared with the CUDA kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/backend_types.h"
#include "numerics/mac.h"
#include "numerics/parallel_for.h"
#include "numerics/philox.h"
#include "numerics/row_reduce.h"

namespace emu::cpu_rows {

// Rows per thread task: at least ~16K floats each.
inline int64_t row_grain(int64_t row_floats) {
  return std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, row_floats));
}

// mac_reduce per output o in [0, outputs) with draws at o * sites + site; `terms(o, a, b)` writes the K
// operand pairs of output o in canonical order and returns its bias (or null). The convolutions' path
// for policies their GEMM kernels do not cover.
template <class Terms>
void direct_reduce(const MacPolicy& p, int64_t outputs, int64_t K, DrawKey key, int threads, float* out,
                   const Terms& terms) {
  const uint64_t sites = mac_site_count(K, p.chunk);
  parallel_for(outputs, threads, 16, [&](int64_t o0, int64_t o1) {
    std::vector<float> a(static_cast<size_t>(K)), b(static_cast<size_t>(K));
    for (int64_t o = o0; o < o1; ++o) {
      const float* bias = terms(o, a.data(), b.data());
      const uint64_t base = static_cast<uint64_t>(o) * sites;
      auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream, base + site); };
      out[o] = static_cast<float>(mac_reduce(p, a.data(), b.data(), K, bias, draw));
    }
  });
}

}  // namespace emu::cpu_rows
