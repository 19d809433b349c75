// Global pooling over time, for variable-length sequences.
//   x: (N, C, L) with dim 2 (or -1), or (N, L, C) with dim 1 -> y: (N, C)
//   mask: (N, L), nonzero = a valid step; undefined = every step is valid. Masked steps take no part and
//   get no gradient; a sequence without a valid step is an error. lengths_mask builds a mask from lengths.
// TemporalAvgPool: S = sum of the valid steps in ascending time in the acc format, y = R_out(S / count)
//   with the exact quotient rounded once. Backward: q = R_g(g / count), each valid step gets q (through
//   a one-term sum, as AdaptiveAvgPool2d). Unmasked, the bits of AdaptiveAvgPool2d(1) on (N, C, 1, L).
// TemporalMaxPool: y = R_out(max of the valid steps), ties to the earliest step, a NaN wins; the gradient
//   goes to that step (as MaxPool2d). docs/layers_sequence.md has the details.
#pragma once

#include "core/module.h"

namespace emu {

// lengths (N): exact integers in [0, L] -> mask (N, L): mask[n, t] = 1 when t < lengths[n], else 0,
// on the lengths' device (checked and built on the host).
Tensor lengths_mask(const Tensor& lengths, int64_t L);

// The ops themselves; `m` gives the numerics, the path of the draw keys and the step.
Tensor temporal_avg_pool(const Module& m, const Tensor& x, int dim, const Tensor& mask = Tensor());
Tensor temporal_max_pool(const Module& m, const Tensor& x, int dim, const Tensor& mask = Tensor());

class TemporalAvgPool : public Module {
 public:
  explicit TemporalAvgPool(int dim = 2);
  Tensor forward(const Tensor& x) { return temporal_avg_pool(*this, x, dim); }
  Tensor forward(const Tensor& x, const Tensor& mask) { return temporal_avg_pool(*this, x, dim, mask); }
  std::string type_name() const override { return "TemporalAvgPool"; }
  int dim;
};

class TemporalMaxPool : public Module {
 public:
  explicit TemporalMaxPool(int dim = 2);
  Tensor forward(const Tensor& x) { return temporal_max_pool(*this, x, dim); }
  Tensor forward(const Tensor& x, const Tensor& mask) { return temporal_max_pool(*this, x, dim, mask); }
  std::string type_name() const override { return "TemporalMaxPool"; }
  int dim;
};

}  // namespace emu
