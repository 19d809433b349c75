// The baseline of emutrain.bench (python/emutrain/bench.py): the engine's own layer, forward and
// backward, timed in C++ with nothing of Python in between, on the shapes the PyTorch layer is
// timed on.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <chrono>
#include <random>

#include "layers/conv2d.h"
#include "layers/linear.h"
#include "python/src/bindings.h"
#include "python/src/policy.h"

namespace emu::python {
namespace {

Tensor normal(const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& e : v) e = d(gen);
  return Tensor::from_vector(shape, v);
}

// kind "linear": x (rows, in) -> (rows, out); "conv2d": x (N, C_in, H, W), out channels, a square
// kernel, stride 1, padding kernel / 2. Returns the seconds of each repetition of
// forward + backward (grad input, weight and bias).
std::vector<double> bench_engine_layer(const std::string& kind, const Shape& x_shape, int64_t out, int kernel,
                                       const Policy& policy, int repeats) {
  std::shared_ptr<Module> m;
  std::function<Tensor(const Tensor&)> forward;
  if (kind == "linear") {
    auto l = std::make_shared<Linear>(x_shape.back(), out);
    forward = [l](const Tensor& x) { return l->forward(x); };
    m = l;
  } else if (kind == "conv2d") {
    auto c = std::make_shared<Conv2d>(x_shape.at(1), out, kernel, 1, kernel / 2);
    forward = [c](const Tensor& x) { return c->forward(x); };
    m = c;
  } else {
    throw py::value_error(fmt::format("bench: unknown layer '{}' (linear, conv2d)", kind));
  }
  m->apply_numerics(policy.policy);
  m->initialize(1);
  Tensor x = normal(x_shape, 2);
  x.set_requires_grad(true);
  Tensor gy = normal(forward(x).shape(), 3);
  std::vector<double> seconds;
  py::gil_scoped_release unlocked;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    Tensor y = forward(x);
    y.backward(gy);
    const auto t1 = std::chrono::steady_clock::now();
    seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    m->zero_grad();
    x.zero_grad();
  }
  return seconds;
}

}  // namespace

void bind_bench(py::module_& m) {
  m.def("_bench_engine_layer", &bench_engine_layer, py::arg("kind"), py::arg("x_shape"), py::arg("out"),
        py::arg("kernel"), py::arg("policy"), py::arg("repeats"));
}

}  // namespace emu::python
