// Loading a large NVIDIA library at run time instead of linking it: cuBLAS
// (the baseline of `bench gemm --device cuda`, ~600 MB with cuBLASLt) and NCCL
// (~220 MB) are found on the machine that runs emutrain (its CUDA toolkit or
// its PyTorch install), so the GPU bundle (tools/gpu_bundle.sh, docs/gpu.md)
// need not carry them and a machine without them still runs everything else.
// Plain C++ (dlopen), no CUDA headers.
#pragma once

#include <string>
#include <vector>

namespace emu {

class SharedLibrary {
 public:
  // Searches, in order: the file named by the environment variable `env_var`
  // (when set, only it), then `soname` through the dynamic loader's own search
  // (LD_LIBRARY_PATH, the ld.so cache), then `soname` in each folder of
  // `folders` (shell globs allowed: "/opt/*/site-packages/nvidia/*/lib").
  // Never throws: loaded() says whether one was found, path() which file,
  // searched() what was tried (for the "not found" message).
  // The library stays mapped for the life of the process (NCCL and cuBLAS keep
  // threads and device state until it ends), so the destructor does not close it.
  SharedLibrary(const char* env_var, const char* soname, const std::vector<std::string>& folders);
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  const std::string& path() const { return path_; }
  std::string searched() const;  // "EMUTRAIN_CUBLAS unset; libcublas.so.13 (loader); /usr/...: absent; ..."

  // The symbol `name`, cast to the function pointer type F; nullptr when absent.
  template <class F>
  F symbol(const char* name) const {
    return reinterpret_cast<F>(raw_symbol(name));
  }

 private:
  void* raw_symbol(const char* name) const;
  void* handle_ = nullptr;
  std::string path_;
  std::vector<std::string> tried_;
};

// Where NVIDIA's libraries live besides the loader's search path: the CUDA
// toolkit's folders and the `nvidia/<package>/lib` folders of pip wheels
// (PyTorch's CUDA build installs cuBLAS and NCCL that way).
std::vector<std::string> nvidia_library_folders();

}  // namespace emu
