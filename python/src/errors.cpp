// The engine's exceptions in Python, each message the engine's one line. Without a class of
// its own: std::invalid_argument -> ValueError, std::out_of_range -> IndexError, any other
// std::exception -> RuntimeError (pybind11's translation).
#include "config/recipe_error.h"
#include "numerics/format_spec.h"
#include "python/src/bindings.h"
#include "train/safetensors.h"
#include "train/trainer.h"

namespace emu::python {

void bind_errors(py::module_& m) {
  py::register_exception<FormatError>(m, "FormatError", PyExc_ValueError);
  py::register_exception<config::RecipeError>(m, "RecipeError", PyExc_ValueError);
  py::register_exception<train::CheckpointError>(m, "CheckpointError", PyExc_ValueError);
  py::register_exception<train::NonFiniteLoss>(m, "NonFiniteLoss", PyExc_ArithmeticError);
}

}  // namespace emu::python
