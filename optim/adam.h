// Adam and AdamW (decoupled weight decay), PyTorch semantics.
#pragma once

#include "optim/optimizer.h"

namespace emu {

struct AdamOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0;
  bool decoupled = false;  // true: AdamW
};

class Adam : public Optimizer {
 public:
  Adam(NamedTensors params, const AdamOptions& options);
  void step() override;
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;

 private:
  AdamOptions options_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  float beta1_power_ = 1, beta2_power_ = 1;  // beta^t, by repeated binary32 products
};

// AdamW is Adam with decoupled weight decay (default 0.01, as PyTorch).
inline AdamOptions adamw_options(float lr, float weight_decay = 0.01f) {
  AdamOptions o;
  o.lr = lr;
  o.weight_decay = weight_decay;
  o.decoupled = true;
  return o;
}

}  // namespace emu
