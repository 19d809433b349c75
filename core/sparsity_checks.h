// The argument checks of the N:M mask ops (EMU_OPS_SPARSITY,
// core/backend_ops_sparsity.h), one definition for every backend, so a bad call
// fails with the same message on the CPU and on a device, before any work. Each
// check throws std::invalid_argument naming the op and the argument.
#pragma once

#include "core/backend_ops_sparsity.h"
#include "core/tensor.h"

namespace emu {

// s: (layout.numel()), any view -> mask: same number of elements, contiguous.
void check_nm_mask(const NmParams& p, const Tensor& s, const Tensor& mask);

// x, mask (same number of elements, any views) -> y (contiguous).
void check_apply_mask(const Tensor& x, const Tensor& mask, const Tensor& y);

}  // namespace emu
