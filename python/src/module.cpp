// emutrain._core: the compiled half of the Python package `emutrain` (python/emutrain/__init__.py
// re-exports it; docs/python.md).
#include "backends/cuda/register.h"
#include "python/src/bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "emutrain's engine: formats, rounding, policies and ops (docs/python.md)";
  emu::register_cuda_devices();  // the device names cuda-host and (with nvcc) cuda
  emu::python::bind_errors(m);
  emu::python::bind_formats(m);
  emu::python::bind_policy(m);
  emu::python::bind_ops(m);
  emu::python::bind_layers(m);
  emu::python::bind_layer_ops(m);
  emu::python::bind_train(m);
  emu::python::bind_bench(m);
}
