#include "python/src/arrays.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "backends/cuda/register.h"
#include "core/device_select.h"

namespace emu::python {
namespace {

std::string g_device = "cpu";

// DLPack 0.x (dlpack.h, the ABI torch.utils.dlpack reads): only what a GPU result needs.
struct DLDevice {
  int32_t device_type;  // kDLCUDA = 2
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLFloat = 2
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// What a DLManagedTensor owns: the engine tensor and the shape arrays it points into.
struct DlpackOwner {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed;
};

void delete_dlpack(DLManagedTensor* self) { delete static_cast<DlpackOwner*>(self->manager_ctx); }

bool is_torch_tensor(py::handle obj) {
  if (!py::hasattr(obj, "data_ptr") || !py::hasattr(obj, "stride")) return false;
  const std::string module = py::str(py::type::of(obj).attr("__module__"));
  return module.rfind("torch", 0) == 0;
}

std::string type_name(py::handle obj) { return py::str(py::type::of(obj).attr("__name__")); }

// The engine device of memory the CPU addresses: cpu, or Device::Cuda when the host
// executor (whose "device" memory is CPU memory) is the active device.
Device host_memory_device() { return g_device == "cuda-host" ? Device::Cuda : Device::Cpu; }

// The stride of a dimension of size 1 never moves the pointer, and PyTorch and NumPy leave
// any value there; the row-major one makes the engine see a contiguous tensor as contiguous.
Shape normal_strides(const Shape& shape, Shape strides) {
  const Shape row_major = contiguous_strides(shape);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 1) strides[i] = row_major[i];
  return strides;
}

Borrowed borrow_torch(py::handle obj, const char* what) {
  const std::string dtype = py::str(obj.attr("dtype"));
  if (dtype != "torch.float32")
    throw py::type_error(
        fmt::format("{}: tensor of dtype {}; emutrain computes on float32 tensors "
                    "(emulated values travel in binary32): pass {}.float()",
                    what, dtype, what));
  py::object dev = obj.attr("device");
  const std::string type = py::str(dev.attr("type"));
  Borrowed b;
  b.owner = py::reinterpret_borrow<py::object>(obj);
  b.is_torch = true;
  Device device;
  if (type == "cpu") {
    device = host_memory_device();
  } else if (type == "cuda") {
    const int index = dev.attr("index").is_none() ? 0 : dev.attr("index").cast<int>();
    if (index != 0)
      throw py::value_error(
          fmt::format("{}: tensor on cuda:{}; emutrain's CUDA backend runs on cuda:0", what, index));
    if (g_device == "cuda-host")
      throw py::value_error(
          fmt::format("{}: tensor on cuda:0 while emutrain's device is cuda-host "
                      "(emutrain.set_device('cuda') runs GPU tensors)",
                      what));
    if (g_device != "cuda") set_device("cuda");  // the engine's one-line reason when it cannot
    device = Device::Cuda;
    b.cuda_index = index;
  } else {
    throw py::value_error(
        fmt::format("{}: tensor on device '{}'; emutrain runs tensors on cpu, and on cuda "
                    "in a build with the CUDA backend",
                    what, type));
  }
  Shape shape = shape_of(obj.attr("shape"), what);
  Shape strides = normal_strides(shape, shape_of(obj.attr("stride")(), what));
  auto* data = reinterpret_cast<float*>(obj.attr("data_ptr")().cast<uintptr_t>());
  b.tensor = Tensor::from_blob(data, shape, strides, device);
  return b;
}

Borrowed borrow_buffer(py::handle obj, const char* what) {
  py::buffer buffer = py::reinterpret_borrow<py::buffer>(obj);
  py::buffer_info info = buffer.request();
  const std::string& f = info.format;
  if (info.itemsize != 4 || (f != "f" && f != "<f" && f != "=f"))
    throw py::type_error(
        fmt::format("{}: array of item format '{}' ({} bytes); emutrain computes on float32 "
                    "arrays (emulated values travel in binary32): pass {}.astype(numpy.float32)",
                    what, f, info.itemsize, what));
  bool strided_ok = true;
  for (py::ssize_t s : info.strides)
    if (s < 0 || s % 4 != 0) strided_ok = false;
  if (!strided_ok) {  // negative or unaligned strides: a row-major copy
    py::object copy = py::module_::import("numpy").attr("ascontiguousarray")(obj);
    Borrowed b = borrow_buffer(copy, what);
    b.owner = copy;
    return b;
  }
  Shape shape(info.shape.begin(), info.shape.end());
  Shape strides;
  for (py::ssize_t s : info.strides) strides.push_back(s / 4);
  Borrowed b;
  b.owner = py::reinterpret_borrow<py::object>(obj);
  b.tensor = Tensor::from_blob(static_cast<float*>(info.ptr), shape, normal_strides(shape, strides),
                               host_memory_device());
  return b;
}

}  // namespace

void set_device(const std::string& name) {
  activate_device(name);  // throws the engine's one-line reason
  g_device = name;
}

const std::string& device() { return g_device; }

Shape shape_of(py::handle sequence, const char* what) {
  Shape s;
  try {
    for (py::handle d : sequence) s.push_back(d.cast<int64_t>());
  } catch (const py::cast_error&) {
    throw py::type_error(fmt::format("{}: a shape is a sequence of integers", what));
  }
  return s;
}

Borrowed borrow(py::handle obj, const char* what) {
  if (is_torch_tensor(obj)) return borrow_torch(obj, what);
  if (PyObject_CheckBuffer(obj.ptr())) return borrow_buffer(obj, what);
  throw py::type_error(fmt::format("{}: expected a float32 NumPy array or PyTorch tensor, got {}", what,
                                   obj.is_none() ? std::string("None") : type_name(obj)));
}

Borrowed borrow_optional(py::handle obj, const char* what) {
  if (obj.is_none()) return Borrowed{};
  return borrow(obj, what);
}

void check_same_device(const std::vector<const Borrowed*>& args) {
  const Borrowed* first = nullptr;
  for (const Borrowed* b : args) {
    if (!b->tensor.defined()) continue;
    if (!first) {
      first = b;
      continue;
    }
    if (b->tensor.device() != first->tensor.device())
      throw py::value_error(
          fmt::format("operands on different devices: {} and {} (emutrain does not move tensors)",
                      device_name(first->tensor.device()), device_name(b->tensor.device())));
  }
}

py::object hand_out_numpy(const Tensor& t) {
  auto* owner = new Tensor(t);
  py::capsule base(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides;
  for (int64_t s : t.strides()) strides.push_back(static_cast<py::ssize_t>(s * 4));
  float* data = t.device() == Device::Cpu ? owner->data() : owner->device_data();
  return py::array(py::dtype::of<float>(), shape, strides, data, base);
}

py::object hand_out(const Tensor& t, const Borrowed& like) {
  const bool gpu_memory = t.device() == Device::Cuda && g_device == "cuda";
  if (!gpu_memory) {
    py::object array = hand_out_numpy(t);
    if (!like.is_torch) return array;
    return py::module_::import("torch").attr("from_numpy")(array);
  }
  auto* owner = new DlpackOwner{t, t.shape(), t.strides(), {}};
  DLTensor& dl = owner->managed.dl_tensor;
  dl.data = owner->tensor.device_data();
  dl.device = {2, like.cuda_index < 0 ? 0 : like.cuda_index};
  dl.ndim = static_cast<int32_t>(owner->shape.size());
  dl.dtype = {2, 32, 1};
  dl.shape = owner->shape.data();
  dl.strides = owner->strides.data();
  dl.byte_offset = 0;
  owner->managed.manager_ctx = owner;
  owner->managed.deleter = &delete_dlpack;
  // A consumer renames the capsule to "used_dltensor" and calls the deleter itself.
  py::capsule capsule(&owner->managed, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      m->deleter(m);
    }
  });
  if (!like.is_torch) return std::move(capsule);
  return py::module_::import("torch").attr("utils").attr("dlpack").attr("from_dlpack")(capsule);
}

void sync_before(const Borrowed& b) {
  if (b.tensor.defined() && b.cuda_index >= 0)
    py::module_::import("torch").attr("cuda").attr("synchronize")();
}

void sync_after(const Tensor& t) {
  if (t.defined() && t.device() == Device::Cuda && g_device == "cuda") synchronize_device("cuda");
}

}  // namespace emu::python
