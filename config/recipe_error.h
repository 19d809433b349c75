// The error of a recipe value that cannot be used: a recipe key, a model
// argument, a data, fault or parallel section. what() is one line that names the
// key path, the value and what is allowed ("optimizer.lr: 'fast' is not a finite
// number").
#pragma once

#include <stdexcept>

#include "numerics/printable.h"

namespace emu::config {

class RecipeError : public OneLineError {
 public:
  using OneLineError::OneLineError;
};

}  // namespace emu::config
