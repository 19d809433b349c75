// Helpers of the data tests: scratch folders, files in the canonical formats,
// and the reference pixel normalisation.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "tests/test_bytes.h"

namespace emu::test {

// A fresh folder under $TMPDIR, removed when the object goes.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "emutrain-data-XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Every entry under `dir`, hidden ones included, as relative paths, sorted;
// empty when `dir` does not exist. Tests of what a command leaves behind.
inline std::set<std::string> dir_listing(const std::string& dir) {
  std::set<std::string> out;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    out.insert(std::filesystem::relative(e.path(), dir).string());
  return out;
}

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

inline void write_text(const std::string& path, const std::string& text) {
  write_file(path, std::vector<uint8_t>(text.begin(), text.end()));
}

inline void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  if (!bytes.empty() &&
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) != static_cast<int>(bytes.size()))
    throw std::runtime_error("gzwrite failed on " + path);
  gzclose(f);
}

// torchvision's ToTensor + Normalize in float32: (p / 255 - mean) / std, each
// operation one binary32 rounding (the build has -ffp-contract=off).
inline float normalized_pixel(uint8_t p, float mean, float std) {
  float x = static_cast<float>(p) / 255.0f;
  return (x - mean) / std;
}

inline std::vector<float> field(const data::Batch& b, const std::string& name) {
  return b.at(name).to_vector();
}

// The data root of the real-data tests: $EMUTRAIN_DATA_ROOT, else ../shared/data
// next to the source tree.
inline std::string real_data_root() {
  const char* env = std::getenv("EMUTRAIN_DATA_ROOT");
  if (env != nullptr && *env != '\0') return env;
#ifdef EMUTRAIN_DEFAULT_DATA_ROOT
  return EMUTRAIN_DEFAULT_DATA_ROOT;
#else
  return "";
#endif
}

}  // namespace emu::test
