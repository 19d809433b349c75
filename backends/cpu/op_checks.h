// The argument checks of the CPU ops: inputs may be any view of the stated
// shape; results are allocated by the caller, contiguous, with the stated shape
// (the conventions of core/backend_ops_*.h). A failed check names the op and the
// argument.
#pragma once

#include <fmt/format.h>

#include <stdexcept>

#include "core/tensor.h"

namespace emu::cpu_checks {

// Input `what` of op `op` has shape `want`.
inline void check_shape(const char* op, const char* what, const Tensor& t, const Shape& want) {
  if (t.shape() != want)
    throw std::invalid_argument(
        fmt::format("{}: {} has shape {}, want {}", op, what, shape_string(t.shape()), shape_string(want)));
}

// Result `what` of op `op` has shape `want` and is contiguous (the op writes it as a flat array).
inline void check_result(const char* op, const char* what, const Tensor& t, const Shape& want) {
  check_shape(op, what, t, want);
  if (!t.is_contiguous()) throw std::invalid_argument(fmt::format("{}: {} must be contiguous", op, what));
}

}  // namespace emu::cpu_checks
