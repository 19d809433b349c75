// Faults injected into the device side of `emutrain validate --device cpu`, so
// that the harness itself is tested (tests/validate.cmake): a comparison that
// cannot fail proves nothing.
//
//   flip:OP    after OP, the lowest bit of element 0 of every result it wrote
//              (tensors, host buffers) is flipped: every case with a
//              non-empty result must FAIL, naming element 0
//   throw:OP   OP throws instead of running: FAIL with the message, and the
//              run goes on with the next case
//   unsup:OP   supports(OP, any family) is false: the row shows unsup
#pragma once

#include <memory>
#include <string>

#include "core/backend.h"

namespace emu::validate {

enum class InjectMode : uint8_t { Flip, Throw, Unsupported };

struct Injection {
  InjectMode mode = InjectMode::Flip;
  Op op{};
};

// Parses "flip:gemm"; throws std::invalid_argument naming the modes and ops.
Injection parse_injection(const std::string& spec);

// A backend of Device::Cpu forwarding every op to `inner`, with `fault` applied.
std::unique_ptr<Backend> make_injecting_backend(Backend& inner, Injection fault);

}  // namespace emu::validate
