// Dropout: in training, element i is zeroed with probability p and the others
// are scaled by R_out(1 / (1 - p)); in evaluation the input passes unchanged.
//   x: any shape -> y: the same shape
// The mask comes from Philox draws keyed by (seed, the layer's DrawSite::Dropout
// stream at the current step, element index), so the CPU and CUDA backends drop
// the same elements, every step draws a new mask, and the backward pass reuses
// the forward's mask (docs/layers_elementwise.md).
#pragma once

#include "layers/sequential.h"

namespace emu {

// The op itself; `training` false returns x. `m` gives the numerics, the path
// of the draw keys and the step.
Tensor dropout(const Module& m, const Tensor& x, float p, bool training);

// R_f(1 / (1 - p)) with the exact quotient (1 - p taken in binary64, exact for
// p >= 2^-29); 0 for p = 1, where every element is dropped. `rand` is read by
// :sr formats only.
float dropout_scale(const Format& f, float p, uint32_t rand = 0);

class Dropout : public UnaryModule {
 public:
  explicit Dropout(float p = 0.5f);
  Tensor forward(const Tensor& x) override { return dropout(*this, x, p, is_training()); }
  std::string type_name() const override { return "Dropout"; }

  float p;
};

}  // namespace emu
