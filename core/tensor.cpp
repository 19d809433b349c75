#include "core/tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/autograd.h"
#include "core/backend.h"

namespace emu {
namespace {

Storage::DeviceAllocator g_cuda_allocator;

TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) throw std::logic_error("use of an undefined tensor");
  return *impl;
}

}  // namespace

const char* device_name(Device d) { return d == Device::Cpu ? "cpu" : "cuda"; }

std::string shape_string(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

namespace {
std::atomic<bool> g_poison_uninitialized{false};

float* allocate_cuda(size_t n) {  // zero-filled (DeviceAllocator)
  if (!g_cuda_allocator.allocate)
    throw std::runtime_error("device 'cuda' requested but this build has no CUDA backend");
  return n ? static_cast<float*>(g_cuda_allocator.allocate(n * sizeof(float))) : nullptr;
}
}  // namespace

Storage::Storage(size_t n, Device device) : size_(n), device_(device) {
  if (device != Device::Cpu) {
    data_ = allocate_cuda(n);
    return;
  }
  data_ = n ? new float[n]() : nullptr;
}

Storage::Storage(Uninitialized, size_t n, Device device) : size_(n), device_(device) {
  if (device != Device::Cpu) {
    data_ = allocate_cuda(n);
    return;
  }
  data_ = n ? new float[n] : nullptr;  // default-initialised: indeterminate until written
  if (g_poison_uninitialized.load(std::memory_order_relaxed))
    std::fill(data_, data_ + n, std::numeric_limits<float>::quiet_NaN());
}

void Storage::poison_uninitialized(bool on) { g_poison_uninitialized.store(on); }

Storage::~Storage() {
  if (!owns_) return;
  if (device_ == Device::Cpu)
    delete[] data_;
  else if (data_)
    g_cuda_allocator.release(data_);
}

void Storage::set_cuda_allocator(DeviceAllocator a) { g_cuda_allocator = a; }

Tensor Tensor::make(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, Device device) {
  for (int64_t d : shape)
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_string(shape));
  auto storage = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)), device);
  return make(std::move(storage), shape, contiguous_strides(shape), 0);
}

Tensor Tensor::uninitialized(const Shape& shape, Device device) {
  for (int64_t d : shape)
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_string(shape));
  auto storage =
      std::make_shared<Storage>(Storage::Uninitialized{}, static_cast<size_t>(shape_numel(shape)), device);
  return make(std::move(storage), shape, contiguous_strides(shape), 0);
}

Tensor Tensor::full(const Shape& shape, float value, Device device) {
  Tensor t = uninitialized(shape, device);
  t.fill(value);
  return t;
}

Tensor Tensor::from_vector(const Shape& shape, const std::vector<float>& values, Device device) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    throw std::invalid_argument(
        fmt::format("from_vector: {} values for shape {}", values.size(), shape_string(shape)));
  Tensor t = uninitialized(shape, device);
  if (values.empty()) return t;
  if (device == Device::Cpu)
    std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  else
    backend_for(device).upload(values.data(), t);
  return t;
}

Tensor Tensor::from_blob(float* data, const Shape& shape, const Shape& strides, Device device) {
  if (strides.size() != shape.size())
    throw std::invalid_argument(
        fmt::format("from_blob: {} strides for shape {}", strides.size(), shape_string(shape)));
  // Elements 0 .. extent-1 of the memory are reachable through the view.
  int64_t extent = shape_numel(shape) > 0 ? 1 : 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || strides[i] < 0)
      throw std::invalid_argument("from_blob: negative size or stride in shape " + shape_string(shape));
    if (extent > 0) extent += (shape[i] - 1) * strides[i];
  }
  auto storage = std::make_shared<Storage>(Storage::Borrowed{}, data, static_cast<size_t>(extent), device);
  return make(std::move(storage), shape, strides, 0);
}

const Shape& Tensor::shape() const { return checked(impl_).shape; }
const Shape& Tensor::strides() const { return checked(impl_).strides; }
int64_t Tensor::offset() const { return checked(impl_).offset; }
int Tensor::ndim() const { return static_cast<int>(shape().size()); }
int64_t Tensor::numel() const { return shape_numel(shape()); }
Device Tensor::device() const { return checked(impl_).storage->device(); }

int64_t Tensor::dim(int i) const {
  int n = ndim();
  if (i < -n || i >= n)
    throw std::out_of_range(fmt::format("dim {} of a tensor of shape {}", i, shape_string(shape())));
  return shape()[i < 0 ? i + n : i];
}

bool Tensor::is_contiguous() const { return strides() == contiguous_strides(shape()); }

namespace {

[[noreturn]] void throw_device_data(const char* call, const Tensor& t) {
  throw std::logic_error(
      fmt::format("Tensor::{} on a {} tensor of shape {}: device memory is reached only through backend ops; "
                  "copy it with to(Device::Cpu) (or to_vector()) first",
                  call, device_name(t.device()), shape_string(t.shape())));
}

}  // namespace

float* Tensor::data() {
  if (device() != Device::Cpu) throw_device_data("data()", *this);
  return impl_->storage->data() + impl_->offset;
}
const float* Tensor::data() const {
  if (device() != Device::Cpu) throw_device_data("data()", *this);
  return impl_->storage->data() + impl_->offset;
}
float* Tensor::device_data() { return checked(impl_).storage->data() + impl_->offset; }
const float* Tensor::device_data() const { return checked(impl_).storage->data() + impl_->offset; }

std::vector<float> Tensor::to_vector() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  if (!out.empty()) backend_for(device()).download(*this, out.data());
  return out;
}

Tensor Tensor::to(Device target) const {
  if (device() == target) return *this;
  Tensor out = uninitialized(shape(), target);
  out.copy_from(*this);
  return out;
}

void Tensor::move_to(Device target) {
  TensorImpl& impl = checked(impl_);
  if (impl.grad) Tensor(impl.grad).move_to(target);
  if (device() == target) return;
  Tensor moved = to(target);
  impl.storage = moved.impl_->storage;
  impl.strides = moved.impl_->strides;
  impl.offset = 0;
}

float Tensor::item() const {
  if (numel() != 1) throw std::invalid_argument("item() of a tensor of shape " + shape_string(shape()));
  return to_vector()[0];
}

Tensor Tensor::view(const Shape& new_shape) const {
  if (!is_contiguous())
    throw std::invalid_argument("view of a non-contiguous tensor: call contiguous() first");
  Shape s = new_shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw std::invalid_argument("view: more than one -1 in " + shape_string(new_shape));
      infer = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0 && known > 0) s[infer] = numel() / known;
  if (shape_numel(s) != numel())
    throw std::invalid_argument(fmt::format("view: shape {} does not hold the {} elements of {}",
                                            shape_string(new_shape), numel(), shape_string(shape())));
  return make(impl_->storage, s, contiguous_strides(s), offset());
}

Tensor Tensor::transpose(int a, int b) const {
  int n = ndim();
  if (a < 0) a += n;
  if (b < 0) b += n;
  if (a < 0 || b < 0 || a >= n || b >= n) throw std::out_of_range("transpose: dims out of range");
  Shape s = shape(), st = strides();
  std::swap(s[a], s[b]);
  std::swap(st[a], st[b]);
  return make(impl_->storage, s, st, offset());
}

Tensor Tensor::narrow(int d, int64_t start, int64_t length) const {
  int n = ndim();
  if (d < 0) d += n;
  if (d < 0 || d >= n || start < 0 || length < 0 || start + length > shape()[d])
    throw std::out_of_range(
        fmt::format("narrow(dim {}, {}, {}) of shape {}", d, start, length, shape_string(shape())));
  Shape s = shape();
  s[d] = length;
  return make(impl_->storage, s, strides(), offset() + start * strides()[d]);
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = uninitialized(shape(), device());
  out.copy_from(*this);
  return out;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.shape() != shape())
    throw std::invalid_argument(
        fmt::format("copy_from: shape {} into {}", shape_string(src.shape()), shape_string(shape())));
  if (numel() == 0) return;
  if (device() == src.device()) {
    backend_for(device()).copy(src, *this);
  } else if (src.device() == Device::Cpu) {  // a transfer: one side is the CPU
    backend_for(device()).upload(src.contiguous().data(), *this);
  } else if (device() == Device::Cpu && is_contiguous()) {
    backend_for(src.device()).download(src, data());
  } else {
    copy_from(src.to(Device::Cpu));
  }
}

void Tensor::fill(float value) {
  if (numel() > 0) backend_for(device()).fill(*this, value);
}

bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }

Tensor& Tensor::set_requires_grad(bool on) {
  checked(impl_).requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const { return Tensor(checked(impl_).grad); }

void Tensor::zero_grad() { checked(impl_).grad.reset(); }

const std::shared_ptr<Node>& Tensor::grad_fn() const { return checked(impl_).grad_fn; }

void Tensor::set_grad_fn(std::shared_ptr<Node> node) { checked(impl_).grad_fn = std::move(node); }

}  // namespace emu
