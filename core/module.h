// Module: a named tree of parameters, buffers and sub-modules, as in PyTorch's
// C++ frontend. The dotted names ("layer4.1.conv2.weight") are the checkpoint
// keys and the targets of per-layer numerics in recipes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/numerics_policy.h"
#include "core/tensor.h"

namespace emu {

// What every module of one model shares: the seed of all random draws and the
// training step, which keys per-step draws (dropout masks, stochastic rounding).
struct RunContext {
  uint64_t seed = 0;
  uint64_t step = 0;
};

class Module {
 public:
  virtual ~Module() = default;

  // Registers a trainable tensor (requires_grad is set) under `name`.
  Tensor register_parameter(const std::string& name, Tensor t);
  // Registers a non-trainable tensor that belongs in the state dict (running statistics).
  Tensor register_buffer(const std::string& name, Tensor t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    attach(name, m);
    return m;
  }

  // Depth first, in registration order, with dotted names relative to this module.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules() const;  // excluding this
  std::vector<Tensor> parameters() const;

  // Parameters and buffers by dotted name. load_state_dict requires exactly the
  // same keys and shapes and names every difference in its error.
  std::map<std::string, Tensor> state_dict() const;
  void load_state_dict(const std::map<std::string, Tensor>& state);

  // Moves every parameter and buffer of this module tree (and their gradients) to
  // `device` in place (Tensor::move_to): the handles held by layers and optimizers
  // stay valid and see the moved tensors; optimizer state follows its parameter at
  // the next step (optim/). Bits do not change.
  void to(Device device);

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();

  // Full dotted path of this module in the model ("" for the root).
  const std::string& path() const { return path_; }
  // Short type name for messages and summaries ("Linear", "Conv2d", ...).
  virtual std::string type_name() const { return "Module"; }

  // Sets the seed and (re)initialises every parameter of this module tree:
  // each module's reset_parameters() draws from Philox keyed by its path.
  void initialize(uint64_t seed);
  virtual void reset_parameters() {}

  // Resolves the policy for this module and every sub-module by path.
  void apply_numerics(const NumericsPolicy& policy);
  const LayerNumerics& numerics() const { return numerics_; }

  // Shares `context` with this module and every sub-module (registered ones
  // join their parent's context).
  void set_context(std::shared_ptr<RunContext> context);
  RunContext& context() const { return *context_; }

 protected:
  Tensor& parameter(const std::string& name);
  Tensor& buffer(const std::string& name);

 private:
  void attach(const std::string& name, std::shared_ptr<Module> m);
  void set_path(const std::string& path);
  void check_new_name(const std::string& name) const;

  std::string path_;
  bool training_ = true;
  LayerNumerics numerics_;
  std::shared_ptr<RunContext> context_ = std::make_shared<RunContext>();
  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace emu
