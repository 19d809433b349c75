// The argument checks every op family shares, one definition for every backend:
// inputs may be any view of the stated shape; results are allocated by the
// caller, contiguous, with the stated shape (the conventions of
// core/backend_ops_*.h). A failed check throws std::invalid_argument naming the
// op and the argument. The checks of one family are core/<family>_checks.h.
#pragma once

#include "core/tensor.h"

namespace emu {

// Input `what` of op `op` has shape `want`.
void check_shape(const char* op, const char* what, const Tensor& t, const Shape& want);

// Result `what` of op `op` has shape `want` and is contiguous (the op writes it as a flat array).
void check_result(const char* op, const char* what, const Tensor& t, const Shape& want);

// Two operands of op `op` have one shape.
void check_same_shape(const char* op, const Tensor& a, const Tensor& b);

}  // namespace emu
