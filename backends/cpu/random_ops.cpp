// Dropout on the CPU: masks from keyed Philox draws (docs/contract.md section 6), so
// every backend and thread count drops the same elements.
#include <algorithm>
#include <functional>

#include "backends/cpu/cpu_backend.h"
#include "core/elementwise_checks.h"
#include "core/tensor.h"
#include "numerics/activations.h"
#include "numerics/element_arith.h"
#include "numerics/philox.h"

namespace emu {
namespace {

// Elements [lo, hi): draws come a Philox block (four consecutive indices) at a
// time, so each block is computed once.
template <class A>
void dropout_range(A a, uint64_t threshold, float scale, const float* x, float* y, DrawKey mask, int64_t lo,
                   int64_t hi) {
  const Philox4x32Key key = philox_key(mask.seed);
  int64_t i = lo;
  while (i < hi) {
    const uint64_t block = static_cast<uint64_t>(i) >> 2;
    const Philox4x32Counter words = philox4x32_10(philox_counter(mask.stream, block), key);
    const int64_t end = std::min<int64_t>(hi, static_cast<int64_t>(block * 4 + 4));
    for (; i < end; ++i) {
      const bool keep = words.v[i & 3] >= threshold;
      a.at(static_cast<uint64_t>(i));
      y[i] = keep ? a.mul(x[i], scale, 0) : 0.0f;
    }
  }
}

}  // namespace

// x: (n) -> y: (n): kept elements R_f(x * scale), dropped ones +0.
void CpuBackend::dropout(float p, float scale, const Format& f, const Tensor& x, Tensor& y, DrawKey mask_key,
                         DrawKey round_key) {
  check_dropout(p, x, y);
  Tensor xc = x.contiguous();
  const float* xp = xc.data();
  float* yp = y.data();
  const uint64_t threshold = dropout_threshold(p);
  const bool plain = is_plain_fp32(f);
  const ElementArith arith(f, round_key.seed, round_key.stream);
  parallel_for(x.numel(), threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
    if (plain)
      dropout_range(Fp32Arith{}, threshold, scale, xp, yp, mask_key, lo, hi);
    else
      dropout_range(arith, threshold, scale, xp, yp, mask_key, lo, hi);
  });
}

}  // namespace emu
