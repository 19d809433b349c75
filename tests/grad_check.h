// Finite-difference gradient checks in plain fp32 (flashlight's jacobianTestImpl
// in spirit): the analytic gradient of L = sum(f(inputs) * r), r a fixed random
// tensor, against central differences (L(x+h) - L(x-h)) / 2h, with the sums
// taken in double so the only fp32 noise is f's own.
#pragma once

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/tensor.h"

namespace emu::test {

struct GradCheckResult {
  bool ok = true;
  std::string detail;  // the worst element
  double worst = 0;    // its |analytic - numeric| / (atol + rtol*|numeric|)
};

inline Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1, float hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = u(rng);
  return Tensor::from_vector(shape, v);
}

inline GradCheckResult grad_check(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                  std::vector<Tensor> inputs, double h = 1e-2, double atol = 2e-3,
                                  double rtol = 2e-2) {
  GradCheckResult result;
  Tensor probe = f(inputs);
  Tensor r = random_tensor(probe.shape(), 4242);
  std::vector<float> rv = r.to_vector();
  auto loss_value = [&](const std::vector<Tensor>& in) {
    NoGradGuard guard;
    std::vector<float> y = f(in).to_vector();
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * rv[i];
    return s;
  };
  // Analytic: backward of sum(y * r) is r.
  for (Tensor& t : inputs) t.zero_grad();
  Tensor y = f(inputs);
  y.backward(r);
  for (size_t which = 0; which < inputs.size(); ++which) {
    Tensor& t = inputs[which];
    if (!t.requires_grad()) continue;
    std::vector<float> analytic =
        t.grad().defined() ? t.grad().to_vector() : std::vector<float>(t.numel(), 0.0f);
    for (int64_t i = 0; i < t.numel(); ++i) {
      float saved = t.data()[i];
      t.data()[i] = static_cast<float>(saved + h);
      double up = loss_value(inputs);
      t.data()[i] = static_cast<float>(saved - h);
      double down = loss_value(inputs);
      t.data()[i] = saved;
      double numeric = (up - down) / (2 * h);
      double err = std::fabs(analytic[i] - numeric) / (atol + rtol * std::fabs(numeric));
      if (err > result.worst) {
        result.worst = err;
        result.detail = "input " + std::to_string(which) + " element " + std::to_string(i) + ": analytic " +
                        std::to_string(analytic[i]) + " numeric " + std::to_string(numeric);
      }
    }
  }
  result.ok = result.worst <= 1.0;
  return result;
}

}  // namespace emu::test
