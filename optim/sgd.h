// SGD with momentum, dampening, Nesterov and weight decay (PyTorch semantics).
#pragma once

#include "optim/optimizer.h"

namespace emu {

struct SgdOptions {
  float lr = 0.01f;
  float momentum = 0;
  float dampening = 0;
  float weight_decay = 0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(NamedTensors params, const SgdOptions& options);
  void step() override;
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;

 private:
  SgdOptions options_;
  std::vector<Tensor> momentum_;  // one buffer per parameter
  std::vector<bool> started_;
};

}  // namespace emu
