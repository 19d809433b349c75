#include "optim/sgd.h"

#include <stdexcept>

#include "core/autograd.h"
#include "core/backend.h"

namespace emu {

SGD::SGD(NamedTensors params, const SgdOptions& options) : Optimizer(std::move(params)), options_(options) {
  lr_ = options.lr;
  for (auto& [_, p] : params_) {
    momentum_.push_back(options.momentum != 0 ? Tensor::zeros(p.shape(), p.device()) : Tensor());
    started_.push_back(false);
  }
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i].second;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    SgdUpdate u;
    u.lr = lr_;
    u.momentum = options_.momentum;
    u.dampening = options_.dampening;
    u.weight_decay = options_.weight_decay;
    u.nesterov = options_.nesterov;
    u.first_step = !started_[i];
    u.update_format = update_format_;
    // State lives with its parameter: a buffer made before Module::to follows it (bits unchanged).
    if (momentum_[i].defined()) momentum_[i].move_to(p.device());
    Tensor buf = momentum_[i].defined() ? momentum_[i] : p;  // unused without momentum
    backend_for(p.device()).sgd_update(u, p, g.contiguous(), buf);
    started_[i] = true;
  }
  ++steps_;
}

std::map<std::string, Tensor> SGD::state_dict() const {
  std::map<std::string, Tensor> s;
  for (size_t i = 0; i < params_.size(); ++i)
    if (momentum_[i].defined() && started_[i]) s[params_[i].first + ".momentum_buffer"] = momentum_[i];
  s["steps"] = Tensor::scalar(static_cast<float>(steps_));
  return s;
}

void SGD::load_state_dict(const std::map<std::string, Tensor>& state) {
  for (size_t i = 0; i < params_.size(); ++i) {
    auto it = state.find(params_[i].first + ".momentum_buffer");
    started_[i] = it != state.end();
    if (started_[i]) {
      if (!momentum_[i].defined())
        throw std::invalid_argument("optimizer state has momentum but SGD has none");
      momentum_[i].copy_from(it->second);
    }
  }
  auto st = state.find("steps");
  steps_ = st == state.end() ? 0 : static_cast<int64_t>(st->second.item());
}

}  // namespace emu
