// Reverse-mode autograd: forward ops record a Node per result; backward()
// walks the recorded graph from a root in reverse creation order.
//
// Determinism: nodes are numbered as they are created and processed from the
// newest to the oldest, so every node runs after all of its consumers and the
// gradient contributions of a tensor used twice are summed in a fixed order
// (binary32 additions, in consumer-processing order).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace emu {

struct Node {
  Node();
  virtual ~Node() = default;
  // grad_output has the shape of the recorded result; returns one gradient per
  // entry of `inputs` (undefined where that input needs none).
  virtual std::vector<Tensor> backward(const Tensor& grad_output) = 0;
  virtual const char* name() const = 0;

  std::vector<Tensor> inputs;  // the tensors this node sends gradients to
  uint64_t sequence;           // creation order
};

// A node whose backward is a lambda: for ops whose backward is a few lines.
struct LambdaNode : Node {
  using Fn = std::function<std::vector<Tensor>(const Tensor&)>;
  LambdaNode(const char* op, std::vector<Tensor> in, Fn fn) : op_(op), fn_(std::move(fn)) {
    inputs = std::move(in);
  }
  std::vector<Tensor> backward(const Tensor& g) override { return fn_(g); }
  const char* name() const override { return op_; }

 private:
  const char* op_;
  Fn fn_;
};

bool grad_enabled();

// Turns gradient recording off in a scope (evaluation, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Whether a result computed from `inputs` must be recorded.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

// Makes `node` the producer of `output` (and output require grad).
void record(Tensor& output, std::shared_ptr<Node> node);

// Shorthand: record a LambdaNode when any input needs a gradient.
void record_lambda(Tensor& output, const char* op, std::vector<Tensor> inputs, LambdaNode::Fn fn);

// Adds g into leaf.grad() (binary32 additions; creates it on first use).
void accumulate_grad(const Tensor& leaf, const Tensor& g);

}  // namespace emu
