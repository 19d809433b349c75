#include "models/model.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace emu::models {

int64_t meta_at(const DataMeta& meta, const std::string& key, const std::string& model) {
  auto it = meta.find(key);
  if (it == meta.end()) {
    std::string have;
    for (const auto& [k, v] : meta) have += (have.empty() ? "" : ", ") + fmt::format("{}={}", k, v);
    throw std::invalid_argument(
        fmt::format("model {} needs the dataset size '{}', which this dataset does not give ({})", model, key,
                    have.empty() ? "none" : have));
  }
  return it->second;
}

Model::Model() {
  CrossEntropyOptions o;
  o.ignore_index = -1;
  loss_ = register_module("loss", std::make_shared<CrossEntropyLoss>(o));
}

Tensor Model::loss(const Prediction& p) { return loss_->forward(p.logits, p.targets); }

void Model::start_probe() {
  probing_ = true;
  first_nonfinite_.clear();
}

std::string Model::stop_probe() {
  probing_ = false;
  return first_nonfinite_;
}

const Tensor& Model::probe(const Module& m, const Tensor& y) {
  if (probing_ && first_nonfinite_.empty() && has_nonfinite(y)) first_nonfinite_ = m.path();
  return y;
}

Tensor example_targets(const data::Batch& batch) {
  const Tensor& y = batch.at("y");
  if (y.ndim() != 1)
    throw std::invalid_argument(
        fmt::format("batch field 'y' has shape {}, want (N)", shape_string(y.shape())));
  return y;
}

bool has_nonfinite(const Tensor& t) {
  if (t.device() != Device::Cpu) return false;  // device tensors are checked by their backend (later)
  Tensor c = t.contiguous();
  const float* p = c.data();
  for (int64_t i = 0, n = c.numel(); i < n; ++i)
    if (!std::isfinite(p[i])) return true;
  return false;
}

}  // namespace emu::models
