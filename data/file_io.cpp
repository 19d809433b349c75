#include "data/file_io.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "data/errors.h"

namespace emu::data {
namespace fs = std::filesystem;

bool file_exists(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool dir_exists(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty() || (!b.empty() && b[0] == '/')) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

std::vector<uint8_t> read_bytes(const std::string& path, const std::string& what, const std::string& url) {
  if (!file_exists(path)) file_error(path, "file not found (expected " + what + ")", url);
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) file_error(path, "cannot open (expected " + what + ")", url);
  // Buffers sized to the file, at most 1 MiB: zlib allocates two of them per
  // open, and a fixed 1 MiB made every small file cost 3 MiB of fresh pages.
  std::error_code ec;
  const uintmax_t on_disk = fs::file_size(path, ec);
  const unsigned buffer =
      ec ? 1u << 16 : static_cast<unsigned>(std::clamp<uintmax_t>(on_disk, 1u << 13, 1u << 20));
  gzbuffer(f, buffer);
  // Read straight into the result, sized for a plain file's bytes (no copy);
  // it grows by doubling when a gzip stream inflates past that.
  std::vector<uint8_t> bytes(ec ? buffer : static_cast<size_t>(on_disk) + buffer);
  size_t used = 0;
  for (;;) {
    if (bytes.size() - used < buffer) bytes.resize(std::max<size_t>(2 * bytes.size(), used + buffer));
    int n = gzread(f, bytes.data() + used,
                   static_cast<unsigned>(std::min<size_t>(bytes.size() - used, 1u << 30)));
    if (n < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      file_error(path, "read error: " + msg + " (expected " + what + ")", url);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  bytes.resize(used);
  // A gzip stream cut short reads as a clean end of file; gzerror tells.
  int code = 0;
  std::string msg = gzerror(f, &code);
  gzclose(f);
  if (msg.compare(0, path.size() + 2, path + ": ") == 0)
    msg.erase(0, path.size() + 2);  // zlib prefixes the path
  if (code != Z_OK && code != Z_STREAM_END)
    file_error(path, "damaged or truncated gzip data: " + msg + " (expected " + what + ")", url);
  return bytes;
}

std::vector<std::string> read_lines(const std::string& path, const std::string& what,
                                    const std::string& url) {
  std::vector<uint8_t> bytes = read_bytes(path, what, url);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i <= bytes.size(); ++i) {
    if (i < bytes.size() && bytes[i] != '\n') continue;
    if (i == bytes.size() && start == i) break;
    size_t end = i;
    if (end > start && bytes[end - 1] == '\r') --end;
    lines.emplace_back(reinterpret_cast<const char*>(bytes.data()) + start, end - start);
    start = i + 1;
  }
  return lines;
}

std::vector<std::string> list_dir(const std::string& path, bool dirs) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (dirs ? entry.is_directory() : entry.is_regular_file()) names.push_back(name);
  }
  if (ec) file_error(path, "cannot list folder: " + ec.message(), "");
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace emu::data
