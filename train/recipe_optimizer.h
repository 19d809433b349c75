// The optimizer a recipe's checked `optimizer:` section describes (sgd, adam,
// adamw and their options, train/recipe.cpp's schema), built in one place for
// the trainer and for `emutrain cost`, which must count the same update.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>

#include "optim/optimizer.h"

namespace emu::train {

// `section` has passed the recipe's schema check (defaults filled in).
std::unique_ptr<Optimizer> make_optimizer(const YAML::Node& section, const NamedTensors& params);

}  // namespace emu::train
