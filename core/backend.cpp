#include "core/backend.h"

#include <fmt/format.h>

#include <stdexcept>

namespace emu {
namespace {

Backend* g_backends[2] = {nullptr, nullptr};

}  // namespace

// The stubs ignore their arguments by design.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define EMU_DEFINE_STUB_OP(name, params, args) \
  void StubBackend::name params { throw std::runtime_error("unimplemented: " #name); }
EMU_BACKEND_OPS(EMU_DEFINE_STUB_OP)
#undef EMU_DEFINE_STUB_OP
#pragma GCC diagnostic pop

const std::vector<std::string>& backend_op_names() {
  static const std::vector<std::string> names = {
#define EMU_OP_NAME(name, params, args) #name,
      EMU_BACKEND_OPS(EMU_OP_NAME)
#undef EMU_OP_NAME
  };
  return names;
}

const char* op_name(Op op) {
  static const char* const names[] = {
#define EMU_OP_CSTR(name, params, args) #name,
      EMU_BACKEND_OPS(EMU_OP_CSTR)
#undef EMU_OP_CSTR
  };
  return names[static_cast<int>(op)];
}

bool op_from_name(std::string_view name, Op* op) {
  for (int i = 0; i < kOpCount; ++i)
    if (name == op_name(static_cast<Op>(i))) {
      *op = static_cast<Op>(i);
      return true;
    }
  return false;
}

Backend& backend_for(Device device) {
  Backend* b = g_backends[static_cast<int>(device)];
  if (!b && device == Device::Cpu) return default_cpu_backend();
  if (!b)
    throw std::runtime_error(fmt::format("no backend for device '{}' in this build{}", device_name(device),
                                         device == Device::Cuda ? " (built without CUDA?)" : ""));
  return *b;
}

void register_backend(Device device, Backend* backend) { g_backends[static_cast<int>(device)] = backend; }

}  // namespace emu
