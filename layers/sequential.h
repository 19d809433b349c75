// UnaryModule: the interface of layers that map one tensor to one tensor, and
// Sequential, a container that applies its modules in order (PyTorch's
// nn.Sequential: the modules are registered as "0", "1", ..., so a parameter's
// name is e.g. "2.weight").
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/module.h"

namespace emu {

class UnaryModule : public Module {
 public:
  virtual Tensor forward(const Tensor& x) = 0;
};

class Sequential : public UnaryModule {
 public:
  Sequential() = default;
  // Sequential(a, b, c): push_back each in turn.
  template <class... M>
  explicit Sequential(std::shared_ptr<M>... modules) {
    (push_back(std::move(modules)), ...);
  }

  // Registers `m` under the next index and runs it in forward(). M is any
  // module with `Tensor forward(const Tensor&)`: a UnaryModule, or a layer such
  // as Linear that has that member without deriving from UnaryModule.
  template <class M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> m) {
    static_assert(std::is_base_of_v<Module, M>, "Sequential holds modules");
    static_assert(std::is_same_v<decltype(m->forward(std::declval<const Tensor&>())), Tensor>,
                  "Sequential needs a module with Tensor forward(const Tensor&)");
    register_module(std::to_string(steps_.size()), m);
    M* raw = m.get();
    steps_.push_back({m, [raw](const Tensor& x) { return raw->forward(x); }});
    return m;
  }

  // x -> modules[size-1](... modules[0](x)).
  Tensor forward(const Tensor& x) override;

  size_t size() const { return steps_.size(); }
  const std::shared_ptr<Module>& at(size_t i) const;
  std::string type_name() const override { return "Sequential"; }

 private:
  struct Step {
    std::shared_ptr<Module> module;
    std::function<Tensor(const Tensor&)> forward;  // calls module's forward; `module` keeps it alive
  };
  std::vector<Step> steps_;
};

}  // namespace emu
