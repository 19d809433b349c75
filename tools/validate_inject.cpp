// The fault-injecting backend of tools/validate_inject.h: every op of the op
// list forwarded through the X-macro, so a new op needs no change here.
#include "tools/validate_inject.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "core/tensor.h"

namespace emu::validate {
namespace {

// Flips the lowest bit of element 0 of a result: the arguments an op writes are
// the non-const tensors and the host pointers; everything else is left alone.
template <class T>
void flip_one(const T&) {}
void flip_one(Tensor& t) {
  if (t.numel() == 0) return;
  uint32_t u;
  std::memcpy(&u, t.data(), sizeof u);
  u ^= 1u;
  std::memcpy(t.data(), &u, sizeof u);
}
void flip_one(Tensor* t) {
  if (t) flip_one(*t);
}
// Host results always have room for element 0 (the runner adds a canary element).
void flip_one(float* p) {
  uint32_t u;
  std::memcpy(&u, p, sizeof u);
  u ^= 1u;
  std::memcpy(p, &u, sizeof u);
}
void flip_one(double* p) {
  uint64_t u;
  std::memcpy(&u, p, sizeof u);
  u ^= 1u;
  std::memcpy(p, &u, sizeof u);
}
void flip_one(int64_t* p) { *p ^= 1; }

template <class... A>
void flip(A&&... a) {
  (flip_one(a), ...);
}

class InjectingBackend : public Backend {
 public:
  InjectingBackend(Backend& inner, Injection fault) : inner_(inner), fault_(fault) {}
  const char* name() const override { return "cpu-with-injected-fault"; }
  Device device() const override { return Device::Cpu; }
  bool supports(Op op, Family f) const override {
    return !(fault_.mode == InjectMode::Unsupported && op == fault_.op) && inner_.supports(op, f);
  }

#define EMU_INJECT_OP(name, params, args)                                                              \
  void name params override {                                                                          \
    const bool hit = Op::name == fault_.op;                                                            \
    if (hit && fault_.mode == InjectMode::Throw) throw std::runtime_error("injected fault in " #name); \
    inner_.name args;                                                                                  \
    if (hit && fault_.mode == InjectMode::Flip) flip args;                                             \
  }
  EMU_BACKEND_OPS(EMU_INJECT_OP)
#undef EMU_INJECT_OP

 private:
  Backend& inner_;
  Injection fault_;
};

}  // namespace

Injection parse_injection(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string mode = spec.substr(0, colon);
  Injection f;
  if (mode == "flip")
    f.mode = InjectMode::Flip;
  else if (mode == "throw")
    f.mode = InjectMode::Throw;
  else if (mode == "unsup")
    f.mode = InjectMode::Unsupported;
  else
    throw std::invalid_argument(
        fmt::format("validate --inject '{}': want flip:OP, throw:OP or unsup:OP", spec));
  if (colon == std::string::npos || !op_from_name(spec.substr(colon + 1), &f.op))
    throw std::invalid_argument(fmt::format("validate --inject '{}': no op named '{}'", spec,
                                            colon == std::string::npos ? "" : spec.substr(colon + 1)));
  return f;
}

std::unique_ptr<Backend> make_injecting_backend(Backend& inner, Injection fault) {
  return std::make_unique<InjectingBackend>(inner, fault);
}

}  // namespace emu::validate
