// The argument checks of the batch-norm ops (EMU_OPS_BATCHNORM,
// core/backend_ops_nn.h), one definition for every backend, so a bad call
// fails with the same message on the CPU and on a device, before any work.
// Each check throws std::invalid_argument naming the op and the argument.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace emu {

// x (N, C, S): N samples of C channels of S positions.
struct BatchNormShape {
  int64_t N, C, S;
  int64_t M() const { return N * S; }  // the terms of a channel's reduction
};

// x (N,C,S) -> mean, var, var_unbiased (C)
BatchNormShape check_batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var,
                                      const Tensor& var_unbiased);

// x (N,C,S), mean, var (C), gamma, beta (C) or null -> y, xhat (N,C,S), invstd (C)
BatchNormShape check_batch_norm_normalize(const Tensor& x, const Tensor& mean, const Tensor& var,
                                          const Tensor* gamma, const Tensor* beta, const Tensor& y,
                                          const Tensor& xhat, const Tensor& invstd);

// mean, var_unbiased (C); running_mean, running_var (C) updated in place. Returns C.
int64_t check_batch_norm_update_running(const Tensor& mean, const Tensor& var_unbiased,
                                        const Tensor& running_mean, const Tensor& running_var);

// gy, xhat (N,C,S), invstd (C), gamma (C) or null -> gx (N,C,S), ggamma, gbeta (C), each optional
BatchNormShape check_batch_norm_backward(const Tensor& gy, const Tensor& xhat, const Tensor& invstd,
                                         const Tensor* gamma, const Tensor* gx, const Tensor* ggamma,
                                         const Tensor* gbeta);

}  // namespace emu
