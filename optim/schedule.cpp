#include "optim/schedule.h"

#include <stdexcept>

namespace emu {

double schedule_cos(double x) {
  // cos(x) = -cos(pi - x): fold to [0, pi/2] for fast convergence.
  const double pi = 3.141592653589793238462643;
  bool negate = false;
  if (x > pi / 2) {
    x = pi - x;
    negate = true;
  }
  double term = 1, sum = 1, x2 = x * x;
  for (int k = 1; k < 20; ++k) {
    term = -term * x2 / ((2 * k - 1) * (2 * k));
    sum += term;
  }
  return negate ? -sum : sum;
}

StepSchedule::StepSchedule(double lr, int64_t step_size, double gamma)
    : lr_(lr), gamma_(gamma), step_size_(step_size) {
  if (step_size <= 0) throw std::invalid_argument("step schedule: step_size must be positive");
}

float StepSchedule::lr_at(int64_t step) const {
  double lr = lr_;
  for (int64_t k = step / step_size_; k > 0; --k) lr *= gamma_;
  return static_cast<float>(lr);
}

CosineSchedule::CosineSchedule(double lr, int64_t total_steps, double min_lr)
    : lr_(lr), min_lr_(min_lr), total_(total_steps) {
  if (total_steps <= 0) throw std::invalid_argument("cosine schedule: total steps must be positive");
}

float CosineSchedule::lr_at(int64_t step) const {
  if (step >= total_) return static_cast<float>(min_lr_);
  const double pi = 3.141592653589793238462643;
  double c = schedule_cos(pi * static_cast<double>(step) / static_cast<double>(total_));
  return static_cast<float>(min_lr_ + (lr_ - min_lr_) * (1 + c) / 2);
}

WarmupSchedule::WarmupSchedule(std::shared_ptr<LrSchedule> inner, int64_t warmup_steps)
    : inner_(std::move(inner)), warmup_(warmup_steps) {
  if (warmup_steps < 0) throw std::invalid_argument("warm-up steps must be >= 0");
}

float WarmupSchedule::lr_at(int64_t step) const {
  if (step >= warmup_) return inner_->lr_at(step - warmup_);
  return static_cast<float>(static_cast<double>(inner_->lr_at(0)) * static_cast<double>(step + 1) /
                            static_cast<double>(warmup_));
}

}  // namespace emu
