#include "core/module.h"

#include <fmt/format.h>

#include <stdexcept>

namespace emu {

void Module::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw std::invalid_argument(
        fmt::format("module '{}': invalid name '{}' (non-empty, no dots)", path_, name));
  auto taken = [&](const auto& list) {
    for (const auto& [n, _] : list)
      if (n == name) return true;
    return false;
  };
  if (taken(parameters_) || taken(buffers_) || taken(children_))
    throw std::invalid_argument(fmt::format("module '{}': name '{}' registered twice", path_, name));
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  check_new_name(name);
  t.set_requires_grad(true);
  parameters_.emplace_back(name, t);
  return parameters_.back().second;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  check_new_name(name);
  buffers_.emplace_back(name, t);
  return buffers_.back().second;
}

void Module::attach(const std::string& name, std::shared_ptr<Module> m) {
  check_new_name(name);
  if (!m) throw std::invalid_argument(fmt::format("module '{}': null sub-module '{}'", path_, name));
  m->set_path(path_.empty() ? name : path_ + "." + name);
  m->train(training_);
  m->set_context(context_);
  children_.emplace_back(name, std::move(m));
}

void Module::set_path(const std::string& path) {
  path_ = path;
  for (auto& [name, child] : children_) child->set_path(path_.empty() ? name : path_ + "." + name);
}

Tensor& Module::parameter(const std::string& name) {
  for (auto& [n, t] : parameters_)
    if (n == name) return t;
  throw std::out_of_range(fmt::format("module '{}' has no parameter '{}'", path_, name));
}

Tensor& Module::buffer(const std::string& name) {
  for (auto& [n, t] : buffers_)
    if (n == name) return t;
  throw std::out_of_range(fmt::format("module '{}' has no buffer '{}'", path_, name));
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out(parameters_.begin(), parameters_.end());
  for (const auto& [name, child] : children_)
    for (auto& [n, t] : child->named_parameters()) out.emplace_back(name + "." + n, t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out(buffers_.begin(), buffers_.end());
  for (const auto& [name, child] : children_)
    for (auto& [n, t] : child->named_buffers()) out.emplace_back(name + "." + n, t);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  for (const auto& [name, child] : children_) {
    out.emplace_back(name, child);
    for (auto& [n, m] : child->named_modules()) out.emplace_back(name + "." + n, m);
  }
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters()) out.push_back(t);
  return out;
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (auto& [n, t] : named_parameters()) out[n] = t;
  for (auto& [n, t] : named_buffers()) out[n] = t;
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state) {
  std::map<std::string, Tensor> mine = state_dict();
  std::vector<std::string> problems;
  for (auto& [name, t] : mine) {
    auto it = state.find(name);
    if (it == state.end())
      problems.push_back("missing '" + name + "'");
    else if (it->second.shape() != t.shape())
      problems.push_back(fmt::format("'{}' has shape {}, the model wants {}", name,
                                     shape_string(it->second.shape()), shape_string(t.shape())));
  }
  for (auto& [name, _] : state)
    if (!mine.count(name)) problems.push_back("unexpected '" + name + "'");
  if (!problems.empty()) {
    std::string msg = "state dict does not match the model:";
    for (auto& p : problems) msg += " " + p + ";";
    msg.pop_back();
    throw std::invalid_argument(msg);
  }
  for (auto& [name, t] : mine) t.copy_from(state.at(name));
}

void Module::to(Device device) {
  for (auto& [_, t] : named_parameters()) t.move_to(device);
  for (auto& [_, t] : named_buffers()) t.move_to(device);
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, child] : children_) child->train(on);
}

void Module::initialize(uint64_t seed) {
  context_->seed = seed;
  reset_parameters();
  for (auto& [_, m] : named_modules()) m->reset_parameters();
}

void Module::apply_numerics(const NumericsPolicy& policy) {
  numerics_ = policy.resolve(path_);
  for (auto& [_, child] : children_) child->apply_numerics(policy);
}

void Module::set_context(std::shared_ptr<RunContext> context) {
  context_ = context;
  for (auto& [_, child] : children_) child->set_context(context);
}

void Module::zero_grad() {
  for (auto& [_, t] : named_parameters()) t.zero_grad();
}

}  // namespace emu
