#include "core/autograd.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/backend.h"

namespace emu {
namespace {

thread_local bool t_grad_enabled = true;
std::atomic<uint64_t> g_next_sequence{0};

// a += b element-wise in binary32 (one addition each, never fused), through the backend of
// a's device: gradients may live on any device, so no element is touched here.
void add_into(Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw std::logic_error(fmt::format("gradient of shape {} for a tensor of shape {}",
                                       shape_string(b.shape()), shape_string(a.shape())));
  if (a.device() != b.device())
    throw std::logic_error(fmt::format("gradient on {} for a tensor whose gradient is on {}",
                                       device_name(b.device()), device_name(a.device())));
  backend_for(a.device()).accumulate(a, b);
}

}  // namespace

Node::Node() : sequence(g_next_sequence.fetch_add(1)) {}

bool grad_enabled() { return t_grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

void record(Tensor& output, std::shared_ptr<Node> node) {
  output.set_requires_grad(true);
  output.set_grad_fn(std::move(node));
}

void record_lambda(Tensor& output, const char* op, std::vector<Tensor> inputs, LambdaNode::Fn fn) {
  if (!needs_grad(inputs)) return;
  record(output, std::make_shared<LambdaNode>(op, std::move(inputs), std::move(fn)));
}

void accumulate_grad(const Tensor& leaf, const Tensor& g) {
  TensorImpl* impl = leaf.impl();
  if (!impl->grad) {
    impl->grad = g.clone().impl_;  // own copy: later accumulation must not write into g
    return;
  }
  Tensor acc(impl->grad);
  add_into(acc, g);
}

void Tensor::backward(const Tensor& grad_output) const {
  if (!requires_grad()) throw std::logic_error("backward() on a tensor that does not require grad");
  Tensor seed = grad_output;
  if (!seed.defined()) {
    if (numel() != 1)
      throw std::logic_error("backward() without a gradient needs a 1-element result, got shape " +
                             shape_string(shape()));
    seed = Tensor::full(shape(), 1.0f, device());
  } else if (seed.device() != device()) {
    seed = seed.to(device());  // a host-made seed (data parallelism's 1/N) meets the result's device
  }
  if (!grad_fn()) {
    accumulate_grad(*this, seed);
    return;
  }
  // Every node reachable from the root, newest first.
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack = {grad_fn().get()};
  seen.insert(stack.back());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (const Tensor& in : n->inputs) {
      if (!in.defined() || !in.grad_fn()) continue;
      Node* m = in.grad_fn().get();
      if (seen.insert(m).second) stack.push_back(m);
    }
  }
  std::sort(order.begin(), order.end(), [](Node* a, Node* b) { return a->sequence > b->sequence; });

  // A gradient that becomes a pending sum must be the sum's own copy (add_into writes into it). One
  // that no one else can reach (its impl and its storage held only here, memory of its own, nothing
  // but a plain contiguous tensor) is already what clone() would make; the others are cloned. Most
  // gradients are fresh op outputs, and cloning each had cost a copy and a clear per op (1-2% of a
  // ResNet-18 step on the CPU).
  auto own_copy = [](Tensor& g) {
    const TensorImpl* t = g.impl_.get();
    const bool sole = g.impl_.use_count() == 1 && t->storage.use_count() == 1 && t->storage->owns() &&
                      !t->requires_grad && !t->grad && !t->grad_fn && t->offset == 0 && g.is_contiguous() &&
                      t->storage->size() == static_cast<size_t>(g.numel());
    return sole ? std::move(g) : g.clone();
  };
  std::unordered_map<Node*, Tensor> pending;
  pending[grad_fn().get()] = seed.clone();
  for (Node* n : order) {
    auto it = pending.find(n);
    if (it == pending.end()) continue;  // no gradient flows into this node
    Tensor g = it->second;
    pending.erase(it);
    std::vector<Tensor> grads = n->backward(g);
    if (grads.size() != n->inputs.size())
      throw std::logic_error(fmt::format("{}: backward returned {} gradients for {} inputs", n->name(),
                                         grads.size(), n->inputs.size()));
    for (size_t i = 0; i < grads.size(); ++i) {
      const Tensor& in = n->inputs[i];
      Tensor& gi = grads[i];
      if (!in.defined() || !gi.defined() || !in.requires_grad()) continue;
      if (gi.shape() != in.shape())
        throw std::logic_error(fmt::format("{}: gradient of shape {} for input {} of shape {}", n->name(),
                                           shape_string(gi.shape()), i, shape_string(in.shape())));
      if (in.grad_fn()) {
        auto slot = pending.find(in.grad_fn().get());
        if (slot == pending.end())
          pending[in.grad_fn().get()] = own_copy(gi);
        else
          add_into(slot->second, gi);
      } else {
        accumulate_grad(in, gi);
      }
    }
  }
}

}  // namespace emu
