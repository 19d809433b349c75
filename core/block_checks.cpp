#include "core/block_checks.h"

#include <fmt/format.h>

#include <stdexcept>

namespace emu {

void check_quantize_blocks(const Tensor& x, const Tensor& y, const ReadLayout& layout) {
  if (x.shape() != y.shape() || layout.numel() != x.numel())
    throw std::invalid_argument(fmt::format("quantize_blocks: {} into {} with layout [{}, {}, {}]",
                                            shape_string(x.shape()), shape_string(y.shape()), layout.outer,
                                            layout.len, layout.inner));
}

}  // namespace emu
