// The argument checks of the loss ops (core/backend_ops_elementwise.h), one
// definition for every backend, so a bad call fails with the same message on
// the CPU and on a device, before any work.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace emu {

// cross_entropy_forward / _backward: rows (N, C) -> out (N, C) contiguous, a
// one-element loss or gradient, targets (N). Returns the row classes of
// numerics/loss_arith.h target_classes (-1: an ignored row); throws
// std::invalid_argument naming `op` and the bad argument.
std::vector<int64_t> check_cross_entropy(const char* op, const char* rows_name, const Tensor& rows,
                                         const char* out_name, const Tensor& out, const Tensor& scalar,
                                         const Tensor& targets, int64_t ignore_index);

// mse_forward: x, target, diff of one shape (diff contiguous), a one-element loss.
void check_mse_forward(const Tensor& x, const Tensor& target, const Tensor& diff, const Tensor& loss);

// mse_backward: diff -> gx (and gtarget) of its shape, contiguous; a one-element gloss.
void check_mse_backward(const Tensor& diff, const Tensor& gloss, const Tensor& gx, const Tensor* gtarget);

}  // namespace emu
