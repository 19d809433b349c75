// The argument checks of the layer-norm ops (EMU_OPS_LAYERNORM,
// core/backend_ops_attention.h), one definition for every backend, so a bad
// call fails with the same message on the CPU and on a device, before any work.
// Each check throws std::invalid_argument naming the op and the argument.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace emu {

// R rows of D features.
struct LayerNormRows {
  int64_t R, D;
};

// x (R,D), gamma, beta (D) or null -> y, xhat (R,D), invstd (R)
LayerNormRows check_layer_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta,
                                       const Tensor& y, const Tensor& xhat, const Tensor& invstd);

// gy, xhat (R,D), invstd (R), gamma (D) or null -> gx (R,D), ggamma, gbeta (D), each optional
LayerNormRows check_layer_norm_backward(const Tensor& gy, const Tensor& xhat, const Tensor& invstd,
                                        const Tensor* gamma, const Tensor* gx, const Tensor* ggamma,
                                        const Tensor* gbeta);

}  // namespace emu
