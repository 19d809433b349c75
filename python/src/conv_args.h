// PyTorch-style convolution and pooling arguments (an int or an (h, w) pair) as the engine's
// parameter structs (core/backend_types.h).
#pragma once

#include <pybind11/pybind11.h>

#include <utility>

#include "core/backend_types.h"
#include "core/tensor.h"

namespace emu::python {

namespace py = pybind11;

// v: an int n (-> (n, n)) or a pair (h, w); TypeError naming `what` otherwise.
std::pair<int64_t, int64_t> int_pair(py::handle v, const char* what);

Conv2dParams conv2d_params(py::handle stride, py::handle padding, py::handle dilation, int groups);

// x (N,C_in,H,W), w (C_out,C_in/G,KH,KW) -> (N, C_out, OH, OW), checked by the engine's
// core/conv_checks (ValueError with its message).
Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& cp);

}  // namespace emu::python
