// Where a tensor's memory lives (its backend: core/backend.h).
#pragma once

#include <cstdint>

namespace emu {

enum class Device : uint8_t { Cpu, Cuda };
const char* device_name(Device d);

}  // namespace emu
