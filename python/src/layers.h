// The engine's layer ops (layers/*.h: linear, conv2d, ...) called from PyTorch.
//
// A LayerHost stands in for the emutrain module a PyTorch layer would be: its dotted path
// (the draw keys, and the policy's overrides, are keyed by it), its resolved numerics, its
// training flag and the RunContext (seed, step) that every layer of one model shares. A
// forward call runs the engine's own layer function on views of the PyTorch tensors, so
// every read, product, accumulation and rounding is the engine's; when gradients are
// wanted it returns a Tape, which runs the same function's recorded backward later
// (emutrain.torch's autograd.Functions call it).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/module.h"
#include "python/src/arrays.h"
#include "python/src/policy.h"

namespace emu::python {

// A module of no type of its own: the stand-in the layer functions receive.
class HostModule : public Module {
 public:
  std::string type_name() const override { return "PyTorchLayer"; }
};

class LayerHost {
 public:
  LayerHost(const std::string& path, const Policy& policy, std::shared_ptr<RunContext> context);
  void set_policy(const Policy& policy);
  const Module& module() const { return *leaf_; }
  RunContext& context() const { return leaf_->context(); }
  std::shared_ptr<RunContext> shared_context() const { return context_; }

 private:
  std::shared_ptr<Module> root_;  // the chain of modules that gives the leaf its path
  std::shared_ptr<HostModule> leaf_;
  std::shared_ptr<RunContext> context_;
};

// What backward needs from one forward call.
class Tape {
 public:
  // grad_output: the result's shape -> one gradient (or None) per input of the forward.
  py::list backward(py::handle grad_output);

  std::shared_ptr<LayerHost> host;  // the lambda of the recorded node points at its module
  std::vector<Borrowed> inputs;     // the leaves, views of the PyTorch tensors
  std::vector<Tensor> outputs;      // the results whose gradients backward takes
  uint64_t step = 0;                // the step the forward ran in
  bool training = true;
};

// Runs `fn` on views of `inputs` (None for an absent optional input) with the module in
// `training` mode; inputs whose `needs_grad` is true become leaves that require grad.
// Returns (outputs..., tape) where tape is None unless some input needs a gradient.
using LayerFn = std::function<std::vector<Tensor>(const Module& m, const std::vector<Tensor>& in)>;
py::tuple run_layer(const std::shared_ptr<LayerHost>& host, const std::vector<py::object>& inputs,
                    const std::vector<bool>& needs_grad, bool training, const LayerFn& fn,
                    const std::vector<const char*>& names);

}  // namespace emu::python
