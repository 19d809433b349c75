// Op family: optimizer updates, element-wise over one parameter tensor.
#pragma once

#include "core/optim_types.h"

// sgd_update:  param, grad, momentum_buf (all the same shape, contiguous) updated in place;
//              the arithmetic of optim/sgd.h, every step rounded to o.update_format.
// adam_update: param, grad, exp_avg, exp_avg_sq updated in place (optim/adam.h).
// scale:       x *= factor element-wise, rounded to f (gradient clipping).
#define EMU_OPS_OPTIM(X)                                                                           \
  X(sgd_update, (const SgdUpdate& o, Tensor& param, const Tensor& grad, Tensor& momentum_buf),     \
    (o, param, grad, momentum_buf))                                                                \
  X(adam_update,                                                                                   \
    (const AdamUpdate& o, Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq), \
    (o, param, grad, exp_avg, exp_avg_sq))                                                         \
  X(scale, (const Format& f, Tensor& x, float factor), (f, x, factor))
