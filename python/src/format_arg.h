// A format argument from Python: a Format, or a spec string parsed here, so that a bad spec
// raises FormatError with the engine's message (an implicit conversion would turn it into
// pybind11's "incompatible function arguments").
#pragma once

#include <pybind11/pybind11.h>

#include "numerics/format.h"

namespace emu::python {

namespace pybind = pybind11;

// v: a Format or a spec string; TypeError naming `what` otherwise.
Format format_arg(pybind::handle v, const char* what);

}  // namespace emu::python
