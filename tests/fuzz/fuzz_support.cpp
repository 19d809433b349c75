#include "tests/fuzz/fuzz_support.h"

#include <sanitizer/allocator_interface.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace emu::fuzz {
namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_base{0};

// Called by the sanitizer allocator for every allocation and free, in every thread.
void on_malloc(const volatile void*, size_t size) {
  int64_t now =
      g_live.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed) + static_cast<int64_t>(size);
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
void on_free(const volatile void* p) {
  g_live.fetch_sub(static_cast<int64_t>(__sanitizer_get_allocated_size(const_cast<const void*>(p))),
                   std::memory_order_relaxed);
}

struct HooksInstalled {
  HooksInstalled() { __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free); }
} g_hooks;

}  // namespace

void fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fuzz check failed: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void require_one_line(const std::exception& e, std::string_view prefix) {
  std::string_view m = e.what();
  if (m.empty()) fail("error message", "empty");
  if (m.find('\n') != std::string_view::npos) fail("error message has more than one line", m);
  if (!prefix.empty() && m.substr(0, prefix.size()) != prefix)
    fail("error message does not start with '" + std::string(prefix) + "'", m);
}

const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/emutrain-fuzz-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) fail("mkdtemp", pattern);
    std::string made(buf.data());
    // Removed at exit; libFuzzer exits through exit() after a normal run.
    static std::string to_remove = made;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(to_remove, ec);
    });
    return made;
  }();
  return dir;
}

std::string write_scratch(const std::string& name, std::string_view bytes) {
  std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) fail("cannot write scratch file", path);
  return path;
}

void remove_scratch(const std::string& name) {
  std::error_code ec;
  std::filesystem::remove(scratch_dir() + "/" + name, ec);
}

std::vector<std::string_view> split_files(std::string_view input, size_t parts) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < parts) {
    size_t at = input.find(kFileSeparator);
    if (at == std::string_view::npos) break;
    out.push_back(input.substr(0, at));
    input.remove_prefix(at + kFileSeparator.size());
  }
  out.push_back(input);
  out.resize(parts);
  return out;
}

size_t inflated_size(std::string_view bytes, size_t cap) {
  // gzread reads a gzip member, then any further members or plain bytes that
  // follow; count the way it does by reading the same bytes through it.
  std::string path = write_scratch(".inflate", bytes);
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return bytes.size();
  std::vector<char> chunk(1 << 16);
  size_t total = 0;
  for (;;) {
    int n = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n <= 0) break;
    total += static_cast<size_t>(n);
    if (total >= cap) break;
  }
  gzclose(f);
  remove_scratch(".inflate");
  return total > bytes.size() ? total : bytes.size();
}

void AllocMeter::start() {
  int64_t now = g_live.load(std::memory_order_relaxed);
  g_base.store(now, std::memory_order_relaxed);
  g_peak.store(now, std::memory_order_relaxed);
}

size_t AllocMeter::peak() const {
  int64_t p = g_peak.load(std::memory_order_relaxed) - g_base.load(std::memory_order_relaxed);
  return p > 0 ? static_cast<size_t>(p) : 0;
}

void require_alloc_bound(const AllocMeter& meter, size_t input_bytes, std::string_view what) {
  size_t bound = kAllocPerByte * input_bytes + kAllocSlack;
  if (meter.peak() > bound)
    fail("allocation bound", std::string(what) + ": peak " + std::to_string(meter.peak()) + " bytes for " +
                                 std::to_string(input_bytes) + " input bytes (bound " +
                                 std::to_string(bound) + ")");
}

}  // namespace emu::fuzz
