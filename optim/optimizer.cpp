#include "optim/optimizer.h"

#include <cmath>

#include "core/backend.h"

namespace emu {

Optimizer::Optimizer(NamedTensors params) : params_(std::move(params)) {}

void Optimizer::zero_grad() {
  for (auto& [_, p] : params_) p.zero_grad();
}

double clip_grad_norm(const NamedTensors& params, double max_norm, const Format& grads_format) {
  double sum = 0;
  for (const auto& [_, p] : params) {
    if (!p.grad().defined()) continue;
    const Tensor g = p.grad();
    // The one binary64 sum continues across tensors on their devices: only the double comes back.
    backend_for(g.device()).sum_squares(g, &sum);
  }
  double norm = std::sqrt(sum);  // IEEE sqrt: correctly rounded, not a libm approximation
  if (norm > max_norm) {
    float factor = static_cast<float>(max_norm / (norm + 1e-6));
    for (const auto& [_, p] : params) {
      if (!p.grad().defined()) continue;
      Tensor g = p.grad();
      backend_for(g.device()).scale(grads_format, g, factor);
    }
  }
  return norm;
}

}  // namespace emu
