#include "core/sparsity_checks.h"

#include <fmt/format.h>

#include <stdexcept>

#include "numerics/nm_rank.h"

namespace emu {

void check_nm_mask(const NmParams& p, const Tensor& s, const Tensor& mask) {
  const ReadLayout& l = p.layout;
  if (p.n < 1 || p.m < 1 || p.m > kNmMaxGroup)
    throw std::invalid_argument(
        fmt::format("nm_mask: {}:{} is not a ratio n:m with 1 <= n, 1 <= m <= {}", p.n, p.m, kNmMaxGroup));
  if (l.len <= 0 || l.outer < 0 || l.inner <= 0 || l.numel() != s.numel())
    throw std::invalid_argument(fmt::format("nm_mask: layout [{}, {}, {}] for a tensor of {} elements",
                                            l.outer, l.len, l.inner, s.numel()));
  if (mask.numel() != s.numel() || !mask.is_contiguous())
    throw std::invalid_argument(fmt::format("nm_mask: mask of shape {} for scores of shape {} (contiguous)",
                                            shape_string(mask.shape()), shape_string(s.shape())));
}

void check_apply_mask(const Tensor& x, const Tensor& mask, const Tensor& y) {
  if (x.numel() != mask.numel() || y.numel() != x.numel() || !y.is_contiguous())
    throw std::invalid_argument(fmt::format("apply_mask: x {}, mask {}, y {} (contiguous)",
                                            shape_string(x.shape()), shape_string(mask.shape()),
                                            shape_string(y.shape())));
}

}  // namespace emu
