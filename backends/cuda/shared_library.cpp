#include "backends/cuda/shared_library.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>

#include <cstdlib>
#include <string>

namespace emu {
namespace {

// The file the loader actually mapped (a soname resolves to a full path).
std::string mapped_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) return map->l_name;
  return fallback;
}

std::vector<std::string> expand(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), GLOB_NOSORT | GLOB_ONLYDIR, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

}  // namespace

SharedLibrary::SharedLibrary(const char* env_var, const char* soname,
                             const std::vector<std::string>& folders) {
  auto attempt = [&](const std::string& file) {
    // RTLD_LOCAL: the library's symbols stay private to this handle (two copies of a
    // library, the machine's and PyTorch's, must not interpose on each other).
    handle_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      path_ = mapped_path(handle_, file);
      return true;
    }
    const char* why = dlerror();
    tried_.push_back(file + ": " + (why ? why : "not loadable"));
    return false;
  };
  if (const char* chosen = std::getenv(env_var); chosen && *chosen) {
    attempt(chosen);
    return;  // an explicit choice is not second-guessed
  }
  tried_.push_back(std::string(env_var) + " unset");
  if (attempt(soname)) return;
  for (const std::string& pattern : folders)
    for (const std::string& folder : expand(pattern))
      if (attempt(folder + "/" + soname)) return;
}

std::string SharedLibrary::searched() const {
  std::string s;
  for (const std::string& t : tried_) s += (s.empty() ? "" : "; ") + t;
  return s;
}

void* SharedLibrary::raw_symbol(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

std::vector<std::string> nvidia_library_folders() {
  std::vector<std::string> f = {"/usr/local/cuda/lib64", "/usr/local/cuda/lib",
                                "/usr/local/cuda/targets/x86_64-linux/lib"};
  // pip wheels: nvidia/<package>/lib (CUDA 12 wheels) and nvidia/cu13/lib (CUDA 13 wheels),
  // in virtual environments, the system's Python and the user's.
  for (const char* site :
       {"/opt/*/.venv/lib/python3*/site-packages", "/opt/*/lib/python3*/site-packages",
        "/usr/local/lib/python3*/dist-packages", "/usr/lib/python3/dist-packages",
        "/usr/local/lib/python3*/site-packages", "/root/.local/lib/python3*/site-packages"})
    f.push_back(std::string(site) + "/nvidia/*/lib");
  return f;
}

}  // namespace emu
