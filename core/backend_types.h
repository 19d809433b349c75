// Parameter types shared by the backend ops.
#pragma once

#include <cstdint>

namespace emu {

// The backend interface passes these by reference only, so a file that
// includes core/backend.h pulls in none of their definitions (numerics/, the
// tensor): it includes what it uses.
class Tensor;
struct Format;                    // numerics/format.h
struct MacPolicy;                 // numerics/mac_policy.h
struct FunctionApprox;            // numerics/pwl.h
struct GateFunctions;             // numerics/recurrent_cells.h
struct CsrMatrix;                 // core/csr.h
enum class Activation : uint8_t;  // numerics/activations.h
enum class Family : uint8_t;      // numerics/format.h

// Key of the random draws of one op call: element/site i draws
// philox_draw(seed, stream, i). Layers derive `stream` from their path, the op
// and the training step (core/draw_key.h), so draws never depend on threads.
struct DrawKey {
  uint64_t seed = 0;
  uint64_t stream = 0;
};

// Conv2d: kernel tap (kh, kw) of output (oh, ow) reads input (oh*stride_h - pad_h + kh*dilation_h,
// ow*stride_w - pad_w + kw*dilation_w). Conv1d is Conv2d with H = KH = 1 (layers/conv1d.h).
struct Conv2dParams {
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;
};

struct Pool2dParams {
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
};

}  // namespace emu
