// The argument checks of the activations, the element-wise add, dropout and the
// softmax (EMU_OPS_ELEMENTWISE, core/backend_ops_elementwise.h; the losses'
// checks are core/loss_checks.h), one definition for every backend, so a bad
// call fails with the same message on the CPU and on a device, before any work.
// Each check throws std::invalid_argument naming the op and the shapes.
#pragma once

#include "core/tensor.h"

namespace emu {

// x -> y of x's shape, contiguous.
void check_activation_forward(const Tensor& x, const Tensor& y);
// x, y, gy of one shape -> gx of that shape, contiguous.
void check_activation_backward(const Tensor& x, const Tensor& y, const Tensor& gy, const Tensor& gx);
// a, b of one shape -> y of that shape, contiguous.
void check_elementwise_add(const Tensor& a, const Tensor& b, const Tensor& y);
// x -> y of x's shape, contiguous; 0 <= p <= 1.
void check_dropout(float p, const Tensor& x, const Tensor& y);
// x: (rows, C) -> y: (rows, C), contiguous (softmax_forward and softmax_forward_fn).
void check_softmax_forward(const Tensor& x, const Tensor& y);
// y, gy: (rows, C) -> gx: (rows, C), contiguous.
void check_softmax_backward(const Tensor& y, const Tensor& gy, const Tensor& gx);

}  // namespace emu
