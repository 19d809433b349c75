// The argument checks of quantize_blocks (EMU_OPS_BLOCKS, core/backend_ops_blocks.h),
// one definition for every backend, so a bad call fails with the same message
// on the CPU and on a device, before any work.
#pragma once

#include "core/tensor.h"
#include "numerics/read_layout.h"

namespace emu {

// x: (n) viewed as [layout.outer, layout.len, layout.inner] -> y: x's shape. Throws
// std::invalid_argument naming the op, both shapes and the layout.
void check_quantize_blocks(const Tensor& x, const Tensor& y, const ReadLayout& layout);

}  // namespace emu
