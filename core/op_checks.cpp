#include "core/op_checks.h"

#include <fmt/format.h>

#include <stdexcept>

namespace emu {

void check_shape(const char* op, const char* what, const Tensor& t, const Shape& want) {
  if (t.shape() != want)
    throw std::invalid_argument(
        fmt::format("{}: {} has shape {}, want {}", op, what, shape_string(t.shape()), shape_string(want)));
}

void check_result(const char* op, const char* what, const Tensor& t, const Shape& want) {
  check_shape(op, what, t, want);
  if (!t.is_contiguous()) throw std::invalid_argument(fmt::format("{}: {} must be contiguous", op, what));
}

void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw std::invalid_argument(
        fmt::format("{}: shapes {} and {} differ", op, shape_string(a.shape()), shape_string(b.shape())));
}

}  // namespace emu
