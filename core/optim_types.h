// Hyper-parameters of one optimizer update, as the backends receive them.
#pragma once

#include "numerics/format.h"

namespace emu {

struct SgdUpdate {
  float lr = 0.01f;
  float momentum = 0;
  float dampening = 0;
  float weight_decay = 0;
  bool nesterov = false;
  bool first_step = true;  // the momentum buffer starts as the gradient
  Format update_format;    // every element-wise step is rounded to it (default fp32)
};

struct AdamUpdate {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0;
  bool decoupled = false;      // AdamW: p -= lr*wd*p instead of g += wd*p
  float bias_correction1 = 1;  // 1 - beta1^t, computed by the optimizer
  float bias_correction2 = 1;  // 1 - beta2^t
  Format update_format;
};

}  // namespace emu
