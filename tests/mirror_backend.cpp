#include "tests/mirror_backend.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "core/csr.h"
#include "core/device_select.h"

namespace emu::test {
namespace {

// --- aliases: the CPU reference sees the mirror's memory as CPU tensors ---

// A mirror op's tensor operand must live on the mirror's device: a CPU tensor
// here is engine code that forgot to put a tensor where the others are.
void check_device(const char* op, const Tensor& t) {
  if (t.defined() && t.device() != Device::Cuda)
    throw std::logic_error(
        fmt::format("mirror backend: op {} got a {} tensor of shape {}; every tensor "
                    "operand must live on the op's device",
                    op, device_name(t.device()), shape_string(t.shape())));
}

Tensor cpu_view(const char* op, const Tensor& t) {
  check_device(op, t);
  if (!t.defined()) return t;
  return Tensor::from_blob(const_cast<float*>(t.device_data()), t.shape(), t.strides(), Device::Cpu);
}

// Holders that live until the end of the forwarding call and hand the CPU op
// the parameter type it declares.
struct MutableAlias {
  Tensor t;
  operator Tensor&() { return t; }
};
struct PointerAlias {
  Tensor t;
  bool null;
  operator Tensor*() { return null ? nullptr : &t; }
};
struct ConstPointerAlias {
  Tensor t;
  bool null;
  operator const Tensor*() { return null ? nullptr : &t; }
};

Tensor alias(const char* op, const Tensor& t) { return cpu_view(op, t); }
MutableAlias alias(const char* op, Tensor& t) { return {cpu_view(op, t)}; }
PointerAlias alias(const char* op, Tensor* t) { return {t ? cpu_view(op, *t) : Tensor(), t == nullptr}; }
ConstPointerAlias alias(const char* op, const Tensor* t) {
  return {t ? cpu_view(op, *t) : Tensor(), t == nullptr};
}
CsrMatrix alias(const char* op, const CsrMatrix& a) {
  CsrMatrix m = a;  // host index arrays are shared data; only the values live on the device
  m.values = cpu_view(op, a.values);
  return m;
}
// Everything else (formats, policies, keys, host pointers of upload/download) passes through.
template <class T>
T&& alias(const char*, T&& v) {
  return std::forward<T>(v);
}

template <class Fn, class... Args>
void forward_to_cpu(const char* op, Fn&& fn, Args&&... args) {
  fn(alias(op, std::forward<Args>(args))...);
}

void* allocate_host(size_t bytes) { return std::calloc(1, bytes); }  // zero-filled, as the hook requires
void release_host(void* p) { std::free(p); }

}  // namespace

void MirrorBackend::reset_calls() {
  for (auto& c : calls_) c.store(0);
}

#define EMU_MIRROR_UNPAREN(...) __VA_ARGS__
#define EMU_MIRROR_DEFINE_OP(name, params, args)                                                \
  void MirrorBackend::name params {                                                             \
    note_call(Op::name);                                                                        \
    forward_to_cpu(                                                                             \
        #name, [](auto&&... a) { default_cpu_backend().name(a...); }, EMU_MIRROR_UNPAREN args); \
  }
EMU_BACKEND_OPS(EMU_MIRROR_DEFINE_OP)
#undef EMU_MIRROR_DEFINE_OP
#undef EMU_MIRROR_UNPAREN

MirrorBackend& install_mirror() {
  static MirrorBackend* mirror = [] {
    auto* m = new MirrorBackend();  // lives as long as the process: tensors may outlive any scope
    Storage::set_cuda_allocator({allocate_host, release_host});
    register_backend(Device::Cuda, m);
    register_device_provider(
        {"cuda-host", "the mirror test backend (CPU ops on host memory)", [m]() -> Backend& { return *m; }});
    return m;
  }();
  return *mirror;
}

}  // namespace emu::test
