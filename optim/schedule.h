// Learning-rate schedules: a pure function of the step number, computed on the
// host in binary64 with our own cosine (no libm), so every run and backend sees
// the same learning rate bits.
#pragma once

#include <cstdint>
#include <memory>

namespace emu {

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  virtual float lr_at(int64_t step) const = 0;  // step counts from 0
};

class ConstantSchedule : public LrSchedule {
 public:
  explicit ConstantSchedule(double lr) : lr_(lr) {}
  float lr_at(int64_t) const override { return static_cast<float>(lr_); }

 private:
  double lr_;
};

// lr * gamma^floor(step / step_size)
class StepSchedule : public LrSchedule {
 public:
  StepSchedule(double lr, int64_t step_size, double gamma);
  float lr_at(int64_t step) const override;

 private:
  double lr_, gamma_;
  int64_t step_size_;
};

// min + (lr - min) * (1 + cos(pi * step / total)) / 2, held at min after total.
class CosineSchedule : public LrSchedule {
 public:
  CosineSchedule(double lr, int64_t total_steps, double min_lr = 0);
  float lr_at(int64_t step) const override;

 private:
  double lr_, min_lr_;
  int64_t total_;
};

// Linear warm-up from lr/warmup to the inner schedule's value over `warmup`
// steps, then the inner schedule shifted by `warmup`.
class WarmupSchedule : public LrSchedule {
 public:
  WarmupSchedule(std::shared_ptr<LrSchedule> inner, int64_t warmup_steps);
  float lr_at(int64_t step) const override;

 private:
  std::shared_ptr<LrSchedule> inner_;
  int64_t warmup_;
};

// cos(x) for x in [0, pi], by Taylor series in binary64 (error < 1e-15).
double schedule_cos(double x);

}  // namespace emu
