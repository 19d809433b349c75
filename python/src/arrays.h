// Python arrays as engine tensors and back (docs/python.md "Memory").
//
// In: a float32 PyTorch tensor (CPU, or CUDA when the backend is built and a GPU is
// present) or any float32 buffer (NumPy arrays) becomes an emu::Tensor over the same
// memory (Tensor::from_blob, any non-negative strides): no copy. NumPy views with
// negative strides are copied to row-major first. Out: an engine tensor is handed to
// Python without a copy, as a NumPy array (CPU memory) or through DLPack (GPU memory),
// whose owner keeps the engine's storage alive; a torch caller gets a torch tensor.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "core/tensor.h"

namespace emu::python {

namespace py = pybind11;

// Where a caller's array lives and what it was.
struct Borrowed {
  Tensor tensor;     // a view of the caller's memory
  py::object owner;  // the caller's object (kept alive while the view is used)
  bool is_torch = false;
  int cuda_index = -1;  // the torch CUDA device index (GPU memory only)
};

// The device name tensors of CPU memory run on: "cpu" (the CPU reference backend) or
// "cuda-host" (the CUDA kernels on the CPU through the host executor). "cuda" runs GPU
// tensors; CPU tensors then still run on the CPU backend.
void set_device(const std::string& name);
const std::string& device();

// `obj` as a tensor. Throws TypeError (not an array, not float32) or ValueError (a device
// this build cannot run) naming `what` ("x", "weight").
Borrowed borrow(py::handle obj, const char* what);
// Undefined for None.
Borrowed borrow_optional(py::handle obj, const char* what);

// Every defined tensor of `args` on the same device as the first; throws ValueError naming both.
void check_same_device(const std::vector<const Borrowed*>& args);

// A result: a torch tensor when `like` came from torch, else a NumPy array (GPU memory:
// a DLPack capsule). The engine's storage lives as long as the returned object.
py::object hand_out(const Tensor& t, const Borrowed& like);
py::object hand_out_numpy(const Tensor& t);

// Waits for the GPU work of torch's current stream (before the engine reads a GPU tensor)
// and for the engine's stream (before torch reads a result); no-ops for CPU memory.
void sync_before(const Borrowed& b);
void sync_after(const Tensor& t);

Shape shape_of(py::handle sequence, const char* what);

}  // namespace emu::python
