#include "models/model.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/backend.h"

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
  if (t.numel() == 0) return false;
  int64_t count = 0;
  backend_for(t.device()).count_nonfinite(t, &count);  // on the tensor's device: one count comes back
  return count > 0;
}

}  // namespace emu::models
