// The parts of the module emutrain._core, one file each (python/src/*.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace emu::python {

namespace py = pybind11;

void bind_errors(py::module_& m);     // errors.cpp: the engine's exceptions as Python exceptions
void bind_formats(py::module_& m);    // formats.cpp: Format, quantize, encode, decode
void bind_policy(py::module_& m);     // policy.cpp: Policy, Numerics, Mac
void bind_ops(py::module_& m);        // backend_ops.cpp: emutrain.backend, the backends' ops
void bind_layers(py::module_& m);     // layers.cpp: Context, LayerHost and Tape, behind emutrain.torch
void bind_layer_ops(py::module_& m);  // layer_ops.cpp: the engine's layer functions on a LayerHost
void bind_train(py::module_& m);      // train.cpp: train, load_checkpoint, threads, devices
void bind_bench(py::module_& m);      // bench.cpp: the engine's own layers timed, for emutrain.bench

}  // namespace emu::python
