// Small datasets written by the tests in the exact canonical file formats:
// MNIST IDX (uncompressed) and the CIFAR-10 binary version. The images are
// easy to learn (a bar whose position is the class) so short runs show
// learning; the bytes come from a fixed LCG, so every run writes the same files.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/test_bytes.h"

namespace emu::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/emutrain_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path.string(); }
};

inline void put_be32(std::ofstream& out, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
  out.write(b, 4);
}

// <dir>/t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte with n 28x28 digits:
// class c (= i % classes) is a bright horizontal bar at rows 2c+2..2c+3, on noise.
inline void write_mnist_idx(const std::string& dir, int n, int classes = 10,
                            const std::string& set = "t10k") {
  std::filesystem::create_directories(dir);
  std::ofstream img(dir + "/" + set + "-images-idx3-ubyte", std::ios::binary);
  std::ofstream lab(dir + "/" + set + "-labels-idx1-ubyte", std::ios::binary);
  put_be32(img, 0x00000803);
  put_be32(img, static_cast<uint32_t>(n));
  put_be32(img, 28);
  put_be32(img, 28);
  put_be32(lab, 0x00000801);
  put_be32(lab, static_cast<uint32_t>(n));
  Lcg rng(12345);
  for (int i = 0; i < n; ++i) {
    const int c = i % classes;
    const int shift = static_cast<int>(rng.next() >> 29);  // 0..7 columns of jitter
    for (int r = 0; r < 28; ++r)
      for (int col = 0; col < 28; ++col) {
        int v = static_cast<int>(rng.next() >> 27);  // noise 0..31
        if ((r == 2 * c + 2 || r == 2 * c + 3) && col >= shift && col < shift + 20) v = 200 + (v & 31);
        img.put(static_cast<char>(v));
      }
    lab.put(static_cast<char>(c));
  }
}

// <dir>/cifar-10-batches-bin/data_batch_1..5.bin (per_file records each) and
// test_batch.bin (test records): 1 label byte, then 3072 bytes (R, G, B planes
// of 32x32). Class c tints channel c % 3 and draws a bar at row 3c.
inline void write_cifar10_bin(const std::string& dir, int per_file, int test) {
  const std::string bin = dir + "/cifar-10-batches-bin";
  std::filesystem::create_directories(bin);
  Lcg rng(777);
  auto write = [&](const std::string& name, int n) {
    std::ofstream out(bin + "/" + name, std::ios::binary);
    for (int i = 0; i < n; ++i) {
      const int c = static_cast<int>(rng.next() >> 28) % 10;
      out.put(static_cast<char>(c));
      for (int ch = 0; ch < 3; ++ch)
        for (int r = 0; r < 32; ++r)
          for (int col = 0; col < 32; ++col) {
            int v = static_cast<int>(rng.next() >> 26);  // 0..63
            if (ch == c % 3) v += 100;
            if (r == 3 * c) v = 250;
            out.put(static_cast<char>(v));
          }
    }
  };
  for (int b = 1; b <= 5; ++b) write("data_batch_" + std::to_string(b) + ".bin", per_file);
  write("test_batch.bin", test);
}

}  // namespace emu::test
