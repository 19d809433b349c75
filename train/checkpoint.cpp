#include "train/checkpoint.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

namespace emu::train {
namespace {

constexpr const char* kFormat = "emutrain-checkpoint";
constexpr const char* kVersion = "1";

const std::string& meta(const TensorFile& f, const std::string& key, const std::string& path) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end())
    throw CheckpointError(fmt::format("corrupt checkpoint {}: metadata lacks '{}'", path, key));
  return it->second;
}

int64_t meta_int(const TensorFile& f, const std::string& key, const std::string& path) {
  const std::string& s = meta(f, key, path);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end || errno == ERANGE || v < 0)
    throw CheckpointError(
        fmt::format("corrupt checkpoint {}: metadata '{}' is '{}', not a count", path, key, s));
  return v;
}

double meta_double(const TensorFile& f, const std::string& key, const std::string& path) {
  const std::string& s = meta(f, key, path);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end)
    throw CheckpointError(
        fmt::format("corrupt checkpoint {}: metadata '{}' is '{}', not a number", path, key, s));
  return v;
}

CheckpointState state_of(const TensorFile& f, const std::string& path) {
  if (meta(f, "format", path) != kFormat)
    throw CheckpointError(
        fmt::format("checkpoint {}: metadata format is '{}', not '{}' (not an emutrain checkpoint)", path,
                    meta(f, "format", path), kFormat));
  if (meta(f, "version", path) != kVersion)
    throw CheckpointError(fmt::format("checkpoint {}: version {} (this emutrain reads version {})", path,
                                      meta(f, "version", path), kVersion));
  CheckpointState s;
  s.position.step = meta_int(f, "step", path);
  s.position.epoch = meta_int(f, "epoch", path);
  s.position.batch = meta_int(f, "batch", path);
  const std::string& seed = meta(f, "seed", path);
  char* end = nullptr;
  s.seed = std::strtoull(seed.c_str(), &end, 10);
  if (seed.empty() || *end)
    throw CheckpointError(fmt::format("corrupt checkpoint {}: metadata 'seed' is '{}'", path, seed));
  s.totals.loss_sum = meta_double(f, "epoch_loss_sum", path);
  s.totals.counted = meta_int(f, "epoch_counted", path);
  s.totals.correct = meta_int(f, "epoch_correct", path);
  s.totals.examples = meta_int(f, "epoch_examples", path);
  s.totals.seconds = meta_double(f, "epoch_seconds", path);
  s.recipe_yaml = meta(f, "recipe", path);
  s.model_type = meta(f, "model", path);
  s.optimizer_type = meta(f, "optimizer", path);
  return s;
}

}  // namespace

void save_checkpoint(const std::string& path, const models::Model& model, const Optimizer* optimizer,
                     const CheckpointState& state) {
  TensorFile f;
  for (const auto& [name, t] : model.state_dict()) f.tensors["model." + name] = t;
  if (optimizer)
    for (const auto& [name, t] : optimizer->state_dict()) f.tensors["optimizer." + name] = t;
  f.metadata = {
      {"format", kFormat},
      {"version", kVersion},
      {"step", std::to_string(state.position.step)},
      {"epoch", std::to_string(state.position.epoch)},
      {"batch", std::to_string(state.position.batch)},
      {"seed", std::to_string(state.seed)},
      // Hex floats read back to the same double, so resumed epoch averages match.
      {"epoch_loss_sum", fmt::format("{:a}", state.totals.loss_sum)},
      {"epoch_counted", std::to_string(state.totals.counted)},
      {"epoch_correct", std::to_string(state.totals.correct)},
      {"epoch_examples", std::to_string(state.totals.examples)},
      {"epoch_seconds", fmt::format("{:a}", state.totals.seconds)},
      {"recipe", state.recipe_yaml},
      {"model", state.model_type},
      {"optimizer", state.optimizer_type},
  };
  write_safetensors(path, f);
}

CheckpointState read_checkpoint_state(const std::string& path) {
  return state_of(read_safetensors(path), path);
}

CheckpointState load_checkpoint(const std::string& path, models::Model& model, Optimizer* optimizer) {
  TensorFile f = read_safetensors(path);
  CheckpointState s = state_of(f, path);
  std::map<std::string, Tensor> model_state, optimizer_state;
  for (const auto& [name, t] : f.tensors) {
    if (name.rfind("model.", 0) == 0)
      model_state[name.substr(6)] = t;
    else if (name.rfind("optimizer.", 0) == 0)
      optimizer_state[name.substr(10)] = t;
    else
      throw CheckpointError(
          fmt::format("checkpoint {}: unexpected tensor {} (neither model.* nor optimizer.*)", path, name));
  }
  const std::map<std::string, Tensor> mine = model.state_dict();
  for (const auto& [name, t] : mine) {
    auto it = model_state.find(name);
    if (it == model_state.end())
      throw CheckpointError(
          fmt::format("checkpoint {}: missing tensor model.{} (the model has it)", path, name));
    if (it->second.shape() != t.shape())
      throw CheckpointError(fmt::format("checkpoint {}: tensor model.{} has shape {}, the model wants {}",
                                        path, name, shape_string(it->second.shape()),
                                        shape_string(t.shape())));
  }
  for (const auto& [name, _] : model_state)
    if (!mine.count(name))
      throw CheckpointError(
          fmt::format("checkpoint {}: unexpected tensor model.{} (the {} model has no such tensor)", path,
                      name, s.model_type));
  model.load_state_dict(model_state);
  if (optimizer) {
    try {
      const std::map<std::string, Tensor> current = optimizer->state_dict();
      for (const auto& [name, t] : optimizer_state) {
        auto it = current.find(name);
        if (it != current.end() && it->second.shape() != t.shape())
          throw CheckpointError(fmt::format("tensor optimizer.{} has shape {}, the optimizer wants {}", name,
                                            shape_string(t.shape()), shape_string(it->second.shape())));
      }
      optimizer->load_state_dict(optimizer_state);
    } catch (const std::exception& e) {
      throw CheckpointError(fmt::format("checkpoint {}: {}", path, e.what()));
    }
  }
  return s;
}

}  // namespace emu::train
