#include "optim/adam.h"

#include <stdexcept>

#include "core/autograd.h"
#include "core/backend.h"

namespace emu {

Adam::Adam(NamedTensors params, const AdamOptions& options)
    : Optimizer(std::move(params)), options_(options) {
  lr_ = options.lr;
  for (auto& [_, p] : params_) {
    exp_avg_.push_back(Tensor::zeros(p.shape(), p.device()));
    exp_avg_sq_.push_back(Tensor::zeros(p.shape(), p.device()));
  }
}

void Adam::step() {
  NoGradGuard no_grad;
  beta1_power_ *= options_.beta1;
  beta2_power_ *= options_.beta2;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i].second;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    AdamUpdate u;
    u.lr = lr_;
    u.beta1 = options_.beta1;
    u.beta2 = options_.beta2;
    u.eps = options_.eps;
    u.weight_decay = options_.weight_decay;
    u.decoupled = options_.decoupled;
    u.bias_correction1 = 1.0f - beta1_power_;
    u.bias_correction2 = 1.0f - beta2_power_;
    u.update_format = update_format_;
    // State lives with its parameter: moments made before Module::to follow it (bits unchanged).
    exp_avg_[i].move_to(p.device());
    exp_avg_sq_[i].move_to(p.device());
    backend_for(p.device()).adam_update(u, p, g.contiguous(), exp_avg_[i], exp_avg_sq_[i]);
  }
  ++steps_;
}

std::map<std::string, Tensor> Adam::state_dict() const {
  std::map<std::string, Tensor> s;
  for (size_t i = 0; i < params_.size(); ++i) {
    s[params_[i].first + ".exp_avg"] = exp_avg_[i];
    s[params_[i].first + ".exp_avg_sq"] = exp_avg_sq_[i];
  }
  s["steps"] = Tensor::scalar(static_cast<float>(steps_));
  s["beta_powers"] = Tensor::from_vector({2}, {beta1_power_, beta2_power_});
  return s;
}

void Adam::load_state_dict(const std::map<std::string, Tensor>& state) {
  auto get = [&](const std::string& key) -> const Tensor& {
    auto it = state.find(key);
    if (it == state.end()) throw std::invalid_argument("Adam state dict lacks '" + key + "'");
    return it->second;
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    exp_avg_[i].copy_from(get(params_[i].first + ".exp_avg"));
    exp_avg_sq_[i].copy_from(get(params_[i].first + ".exp_avg_sq"));
  }
  steps_ = static_cast<int64_t>(get("steps").item());
  std::vector<float> powers = get("beta_powers").to_vector();
  beta1_power_ = powers.at(0);
  beta2_power_ = powers.at(1);
}

}  // namespace emu
