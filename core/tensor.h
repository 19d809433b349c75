// Tensor: float32 storage with shape, strides and an offset, on one device,
// plus the autograd metadata (core/autograd.h) that training needs.
//
// A Tensor is a handle: copies share the same TensorImpl, views share the same
// Storage. Emulated values travel in binary32 (docs/contract.md section 1.1), so
// float32 is the only element type.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"

namespace emu {

using Shape = std::vector<int64_t>;
std::string shape_string(const Shape& s);  // "(2, 3, 4)"
int64_t shape_numel(const Shape& s);

// A flat buffer of floats on one device. CUDA buffers come from the allocator
// the CUDA backend registers (core stays free of CUDA headers).
class Storage {
 public:
  Storage(size_t n, Device device);  // zeros
  // Elements the caller writes before anything reads them (Tensor::uninitialized): on the CPU
  // left as they are, or set to a NaN while poison_uninitialized is on; zeros on CUDA.
  struct Uninitialized {};
  Storage(Uninitialized, size_t n, Device device);
  // A view of memory this Storage does not own (Tensor::from_blob): never released.
  struct Borrowed {};
  Storage(Borrowed, float* data, size_t n, Device device)
      : data_(data), size_(n), device_(device), owns_(false) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }
  Device device() const { return device_; }
  bool owns() const { return owns_; }  // false for from_blob's borrowed memory

  struct DeviceAllocator {
    void* (*allocate)(size_t bytes) = nullptr;  // zero-filled
    void (*release)(void* ptr) = nullptr;
  };
  static void set_cuda_allocator(DeviceAllocator a);
  // Tests: uninitialised CPU storage starts as NaN (a read before the write shows in the results).
  static void poison_uninitialized(bool on);

 private:
  float* data_ = nullptr;
  size_t size_ = 0;
  Device device_;
  bool owns_ = true;
};

struct Node;
struct TensorImpl;

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  // Factories. Values are zero unless given.
  static Tensor zeros(const Shape& shape, Device device = Device::Cpu);
  // For outputs the caller writes in full before they are read (an op's output, a copy's
  // target): no zero fill, which had been ~3.5% of a ResNet-18 fp32 step (one memset per output,
  // in the thread that runs the graph). Storage::poison_uninitialized lets tests check the writes.
  static Tensor uninitialized(const Shape& shape, Device device = Device::Cpu);
  static Tensor full(const Shape& shape, float value, Device device = Device::Cpu);
  static Tensor from_vector(const Shape& shape, const std::vector<float>& values,
                            Device device = Device::Cpu);
  static Tensor scalar(float value, Device device = Device::Cpu) { return from_vector({}, {value}, device); }
  // A tensor over memory it does not own: element (i0, i1, ...) at data[sum i_k * strides[k]],
  // in the memory of `device`. The caller keeps the memory alive while the tensor is used
  // (tests/mirror_backend.cpp views device tensors as CPU tensors this way).
  static Tensor from_blob(float* data, const Shape& shape, const Shape& strides, Device device = Device::Cpu);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  int64_t offset() const;
  int64_t dim(int i) const;  // negative i counts from the end
  int ndim() const;
  int64_t numel() const;
  Device device() const;
  bool is_contiguous() const;

  // CPU element access; data() points at element 0 of the view. On a tensor of
  // another device it throws std::logic_error naming the call: device memory is
  // reached only through backend ops (core/backend_ops_memory.h), so no code
  // outside backends/ can read it by accident.
  float* data();
  const float* data() const;
  // Element 0 of the view in the memory of the tensor's device (a device
  // pointer for cuda): for backends only.
  float* device_data();
  const float* device_data() const;
  std::vector<float> to_vector() const;  // row-major copy of the view, from any device
  float item() const;                    // the one element of a 1-element tensor, from any device

  // A row-major copy on `device` (this tensor itself when it is already there).
  // Autograd does not see the transfer: the copy is a new leaf.
  Tensor to(Device device) const;
  // Moves this tensor (and its gradient, if any) to `device` in place: every handle
  // of this TensorImpl sees a row-major copy on `device` (Module::to keeps the handles
  // that optimizers and layers hold valid). Views taken before keep the old storage.
  void move_to(Device device);

  // Views (share storage; autograd does not record them: layers/shape_ops.h records reshape and flatten).
  Tensor view(const Shape& shape) const;  // contiguous only; one -1 allowed
  Tensor transpose(int a, int b) const;
  Tensor narrow(int dim, int64_t start, int64_t length) const;
  Tensor contiguous() const;          // this, or a row-major copy
  Tensor clone() const;               // a row-major copy that does not share storage
  void copy_from(const Tensor& src);  // same shape, any devices; element-wise copy into this view
  void fill(float value);             // through the backend of this tensor's device

  // Autograd.
  bool requires_grad() const;
  Tensor& set_requires_grad(bool on);
  Tensor grad() const;  // undefined until a backward pass reaches this leaf
  void zero_grad();     // drops the gradient
  const std::shared_ptr<Node>& grad_fn() const;
  void set_grad_fn(std::shared_ptr<Node> node);
  void backward(const Tensor& grad_output = Tensor()) const;  // default: ones for a scalar

  TensorImpl* impl() const { return impl_.get(); }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  static Tensor make(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset);
  std::shared_ptr<TensorImpl> impl_;
  friend struct TensorImpl;
  friend void accumulate_grad(const Tensor& leaf, const Tensor& g);
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape, strides;
  int64_t offset = 0;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<Node> grad_fn;
};

// Row-major strides of a shape.
Shape contiguous_strides(const Shape& shape);

}  // namespace emu
