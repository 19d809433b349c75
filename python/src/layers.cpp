#include "python/src/layers.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <sstream>

#include "core/autograd.h"

namespace emu::python {
namespace {

// Restores the context's step when a backward leaves (it runs in the step of its forward).
class StepScope {
 public:
  StepScope(RunContext& c, uint64_t step) : c_(c), saved_(c.step) { c_.step = step; }
  ~StepScope() { c_.step = saved_; }
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;

 private:
  RunContext& c_;
  uint64_t saved_;
};

// The path's components: "layer4.1.conv2" -> {layer4, 1, conv2}; "" -> {}.
std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  if (path.empty()) return out;
  std::string part;
  std::istringstream in(path);
  while (std::getline(in, part, '.')) out.push_back(part);
  if (path.back() == '.') out.push_back("");
  return out;
}

// The gradients a joint backward sends into several results at once: a root whose node
// hands each result its gradient, so one backward walks the whole recorded graph.
struct FanIn : Node {
  std::vector<Tensor> grads;
  std::vector<Tensor> backward(const Tensor&) override { return grads; }
  const char* name() const override { return "python-fan-in"; }
};

}  // namespace

LayerHost::LayerHost(const std::string& path, const Policy& policy, std::shared_ptr<RunContext> context)
    : context_(std::move(context)) {
  // The module gets its path by being registered under a chain of parents, one per
  // component (the engine's names: non-empty, no dots; it rejects others with its message).
  const std::vector<std::string> parts = components(path);
  leaf_ = std::make_shared<HostModule>();
  if (parts.empty()) {
    root_ = leaf_;
  } else {
    root_ = std::make_shared<Module>();
    Module* parent = root_.get();
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto next = std::make_shared<Module>();
      parent->register_module(parts[i], next);
      parent = next.get();
    }
    parent->register_module(parts.back(), leaf_);
  }
  root_->set_context(context_);
  set_policy(policy);
}

void LayerHost::set_policy(const Policy& policy) { root_->apply_numerics(policy.policy); }

py::tuple run_layer(const std::shared_ptr<LayerHost>& host, const std::vector<py::object>& inputs,
                    const std::vector<bool>& needs_grad, bool training, const LayerFn& fn,
                    const std::vector<const char*>& names) {
  auto tape = std::make_shared<Tape>();
  tape->host = host;
  tape->step = host->context().step;
  tape->training = training;
  std::vector<const Borrowed*> all;
  bool any_grad = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    tape->inputs.push_back(borrow_optional(inputs[i], names[i]));
    Borrowed& b = tape->inputs.back();
    if (b.tensor.defined() && i < needs_grad.size() && needs_grad[i]) {
      b.tensor.set_requires_grad(true);
      any_grad = true;
    }
  }
  for (const Borrowed& b : tape->inputs) all.push_back(&b);
  check_same_device(all);
  for (const Borrowed& b : tape->inputs) sync_before(b);
  std::vector<Tensor> views;
  for (const Borrowed& b : tape->inputs) views.push_back(b.tensor);
  std::vector<Tensor> outs;
  {
    py::gil_scoped_release unlocked;
    const_cast<Module&>(host->module()).train(training);
    if (any_grad) {
      outs = fn(host->module(), views);
    } else {
      NoGradGuard off;
      outs = fn(host->module(), views);
    }
    for (const Tensor& t : outs) sync_after(t);
  }
  const Borrowed& like = tape->inputs.front();
  py::list result;
  for (const Tensor& t : outs)
    result.append(t.defined() ? hand_out(t.contiguous(), like) : py::object(py::none()));
  tape->outputs = outs;
  if (any_grad)
    result.append(py::cast(tape));
  else
    result.append(py::none());
  return py::tuple(result);
}

py::list Tape::backward(py::handle grad_output) {
  // One gradient per output (a tuple when the forward had several).
  std::vector<py::object> given;
  if (outputs.size() == 1)
    given.push_back(py::reinterpret_borrow<py::object>(grad_output));
  else
    for (py::handle g : grad_output) given.push_back(py::reinterpret_borrow<py::object>(g));
  if (outputs.empty())
    throw std::logic_error(
        "backward through this call a second time (its recorded graph was freed after the "
        "first backward)");
  if (given.size() != outputs.size())
    throw py::value_error(fmt::format("backward: {} gradients for {} results", given.size(), outputs.size()));
  std::vector<Borrowed> grads;
  for (size_t i = 0; i < given.size(); ++i) {
    grads.push_back(borrow_optional(given[i], "grad_output"));
    const Tensor& g = grads.back().tensor;
    if (!g.defined()) continue;
    if (g.shape() != outputs[i].shape())
      throw py::value_error(fmt::format("grad_output of shape {} for a result of shape {}",
                                        shape_string(g.shape()), shape_string(outputs[i].shape())));
    sync_before(grads.back());
  }
  std::vector<Tensor> in_grads(inputs.size());
  {
    py::gil_scoped_release unlocked;
    StepScope scope(host->context(), step);
    const_cast<Module&>(host->module()).train(training);
    const Tensor& out = outputs.front();
    std::shared_ptr<Node> node = outputs.size() == 1 ? out.grad_fn() : nullptr;
    bool direct = node != nullptr;  // one node straight onto the leaves: call it without a graph walk
    if (direct)
      for (const Tensor& t : node->inputs)
        if (t.defined() && t.grad_fn()) direct = false;
    if (direct) {
      if (grads.front().tensor.defined()) {
        std::vector<Tensor> g = node->backward(grads.front().tensor);
        for (size_t i = 0; i < inputs.size(); ++i)
          for (size_t j = 0; j < node->inputs.size() && j < g.size(); ++j)
            if (inputs[i].tensor.defined() && node->inputs[j].same(inputs[i].tensor) &&
                inputs[i].tensor.requires_grad())
              in_grads[i] = g[j];
      }
    } else {
      auto fan = std::make_shared<FanIn>();
      for (size_t i = 0; i < outputs.size(); ++i) {
        fan->inputs.push_back(outputs[i].requires_grad() ? outputs[i] : Tensor());
        fan->grads.push_back(grads[i].tensor);
      }
      Tensor root = Tensor::zeros({}, out.device());
      record(root, fan);
      root.backward(Tensor::zeros({}, out.device()));
      for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].tensor.defined() && inputs[i].tensor.requires_grad())
          in_grads[i] = inputs[i].tensor.grad();
    }
    for (const Tensor& t : in_grads) sync_after(t);
  }
  outputs.clear();  // frees the recorded graph
  py::list result;
  const Borrowed& like = inputs.front();
  for (const Tensor& g : in_grads)
    result.append(g.defined() ? hand_out(g.contiguous(), like) : py::object(py::none()));
  return result;
}

void bind_layers(py::module_& m) {
  py::class_<RunContext, std::shared_ptr<RunContext>>(
      m, "Context", "The seed and training step every emulated layer of one model shares (core/module.h)")
      .def(py::init([](uint64_t seed, uint64_t step) {
             return std::make_shared<RunContext>(RunContext{seed, step});
           }),
           py::arg("seed") = 0, py::arg("step") = 0)
      .def_readwrite("seed", &RunContext::seed)
      .def_readwrite("step", &RunContext::step)
      .def(py::pickle(
          [](const RunContext& c) { return py::make_tuple(c.seed, c.step); },
          [](const py::tuple& t) {
            return std::make_shared<RunContext>(RunContext{t[0].cast<uint64_t>(), t[1].cast<uint64_t>()});
          }))
      .def("__repr__",
           [](const RunContext& c) { return fmt::format("Context(seed={}, step={})", c.seed, c.step); });

  py::class_<LayerHost, std::shared_ptr<LayerHost>>(m, "LayerHost")
      .def(py::init<const std::string&, const Policy&, std::shared_ptr<RunContext>>(), py::arg("path"),
           py::arg("policy"), py::arg("context"))
      .def("set_policy", &LayerHost::set_policy)
      .def_property_readonly("path", [](const LayerHost& h) { return h.module().path(); })
      .def_property_readonly("numerics", [](const LayerHost& h) { return h.module().numerics(); })
      .def_property_readonly("context", &LayerHost::shared_context);

  py::class_<Tape, std::shared_ptr<Tape>>(m, "Tape").def("backward", &Tape::backward, py::arg("grad_output"));

  // For tests of the memory rules (docs/python.md "Memory"): where the engine's view of `x`
  // starts, and its strides in elements.
  m.def("_view", [](py::handle x) {
    Borrowed b = borrow(x, "x");
    Tensor& t = b.tensor;
    const float* p = t.device() == Device::Cpu ? t.data() : t.device_data();
    return py::make_tuple(reinterpret_cast<uintptr_t>(p), t.strides());
  });
}

}  // namespace emu::python
