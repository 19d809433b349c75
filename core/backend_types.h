// Parameter types shared by the backend ops.
#pragma once

#include <cstdint>

#include "core/numerics_policy.h"
#include "core/tensor.h"
#include "numerics/format.h"
#include "numerics/mac.h"

namespace emu {

// Key of the random draws of one op call: element/site i draws
// philox_draw(seed, stream, i). Layers derive `stream` from their path, the op
// and the training step (core/draw_key.h), so draws never depend on threads.
struct DrawKey {
  uint64_t seed = 0;
  uint64_t stream = 0;
};

struct Conv2dParams {
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int groups = 1;
};

struct Pool2dParams {
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
};

}  // namespace emu
