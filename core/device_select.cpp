#include "core/device_select.h"

#include <fmt/format.h>

#include <mutex>
#include <stdexcept>

namespace emu {
namespace {

std::mutex g_mutex;

std::vector<DeviceProvider>& providers() {
  static std::vector<DeviceProvider> all;
  return all;
}

const DeviceProvider* find(const std::string& name) {
  for (const DeviceProvider& p : providers())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

void register_device_provider(DeviceProvider provider) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (DeviceProvider& p : providers())
    if (p.name == provider.name) {
      p = std::move(provider);
      return;
    }
  providers().push_back(std::move(provider));
}

std::vector<std::string> device_names() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<std::string> names = {"cpu"};
  for (const DeviceProvider& p : providers()) names.push_back(p.name);
  return names;
}

Device activate_device(const std::string& name) {
  if (name == "cpu") return Device::Cpu;
  std::function<Backend&()> activate;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const DeviceProvider* p = find(name);
    if (!p) {
      std::string known = "cpu";
      for (const DeviceProvider& q : providers()) known += ", " + q.name;
      throw std::runtime_error(fmt::format("unknown device '{}' (this build knows: {}{})", name, known,
                                           providers().empty() ? "; built without CUDA" : ""));
    }
    activate = p->activate;
  }
  Backend& backend = activate();
  register_backend(Device::Cuda, &backend);
  return Device::Cuda;
}

std::string device_description(const std::string& name) {
  if (name == "cpu") return "cpu: the CPU reference backend";
  std::lock_guard<std::mutex> lock(g_mutex);
  const DeviceProvider* p = find(name);
  return p ? p->name + ": " + p->description : name;
}

}  // namespace emu
