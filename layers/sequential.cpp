#include "layers/sequential.h"

#include <fmt/format.h>

#include <stdexcept>

namespace emu {

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (const Step& s : steps_) h = s.forward(h);
  return h;
}

const std::shared_ptr<Module>& Sequential::at(size_t i) const {
  if (i >= steps_.size())
    throw std::out_of_range(fmt::format("{}: module {} of a Sequential of {}",
                                        path().empty() ? "Sequential" : path(), i, steps_.size()));
  return steps_[i].module;
}

}  // namespace emu
