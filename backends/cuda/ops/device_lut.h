// Approximate multipliers on the device: a MacPolicy's lookup table
// (numerics/approx_mul_lut.h) lives in host memory, where a GPU kernel cannot
// read it; kernels that reduce under a policy with a table get a copy whose
// table is in device memory.
#pragma once

#include "backends/cuda/ops/target.h"
#include "numerics/mac.h"

namespace emu::EMU_CUDA_NS {

// p, its table (if any) replaced by a device copy. Tables live as long as the
// process (numerics/approx_mul.cpp caches every table it builds), so each is
// copied once, on first use, and kept. Under the host executor device memory
// is host memory: p itself.
MacPolicy with_device_lut(const MacPolicy& p);

}  // namespace emu::EMU_CUDA_NS
