// Embedding emutrain: build a model in C++, give it an emulated numerics
// policy, and train it for a few steps, without recipes or the CLI.
//
//   cmake -S examples/embed -B build-embed -DCMAKE_PREFIX_PATH=<emutrain install prefix>
//   cmake --build build-embed && build-embed/embed_example
#include <cstdio>
#include <memory>
#include <vector>

#include "core/autograd.h"
#include "core/numerics_policy.h"
#include "layers/activation.h"
#include "layers/linear.h"
#include "layers/loss.h"
#include "layers/sequential.h"
#include "optim/sgd.h"

int main() {
  using namespace emu;

  // Two classes in 4 dimensions: the label is whether x0 + x1 > x2 + x3.
  const int64_t n = 64;
  std::vector<float> xs, ys;
  uint32_t state = 12345;
  auto next = [&state] {  // a tiny LCG: the example needs no RNG library
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f;
  };
  for (int64_t i = 0; i < n; ++i) {
    float v[4] = {next(), next(), next(), next()};
    xs.insert(xs.end(), v, v + 4);
    ys.push_back(v[0] + v[1] > v[2] + v[3] ? 1.0f : 0.0f);
  }
  Tensor x = Tensor::from_vector({n, 4}, xs), y = Tensor::from_vector({n}, ys);

  auto model = std::make_shared<Sequential>();
  model->push_back(std::make_shared<Linear>(4, 16));
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<Linear>(16, 2));

  // Every read, product and sum in e6m6 (6 exponent bits, 6 mantissa bits),
  // accumulated in binary32; the last layer entirely in bf16.
  NumericsPolicy policy;
  policy.set("format", "e6m6");
  policy.set("acc", "fp32");
  policy.set_override("2", "format", "bf16");

  model->initialize(7);
  model->apply_numerics(policy);
  auto loss_fn = std::make_shared<CrossEntropyLoss>();
  loss_fn->apply_numerics(policy);
  SgdOptions options;
  options.lr = 0.5f;
  SGD sgd(model->named_parameters(), options);

  float first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    sgd.zero_grad();
    Tensor loss = loss_fn->forward(model->forward(x), y);
    loss.backward();
    sgd.step();
    model->context().step += 1;
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  std::printf("loss: first %.4f last %.4f\n", first, last);
  return last < first ? 0 : 1;
}
