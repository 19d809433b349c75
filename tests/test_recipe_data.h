// Small files in the canonical formats of the recipes' datasets that the
// offline machines lack or that are too large for a quick run: UCR 2018 series
// (FordA), Cora (LINQS content + cites) and English-French pairs (fra.txt). MNIST
// and CIFAR-10 writers are in tests/test_trainer_data.h. Deterministic bytes, so
// every run writes the same files.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "tests/test_bytes.h"

namespace emu::test {

// Writes `text` to `path`, creating its folder.
inline void write_data_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

// A UCR 2018 file: "<label>\t<v1>\t...\t<vT>\n" per series. Class -1 series are noisy
// sines, class 1 noisy square waves, so a few steps can make progress.
inline void write_ucr(const std::string& path, int64_t count, int64_t length, uint64_t seed) {
  ByteSource bytes(seed);
  std::string text;
  for (int64_t i = 0; i < count; ++i) {
    const bool positive = i % 2 == 1;
    text += positive ? "1" : "-1";
    for (int64_t s = 0; s < length; ++s) {
      const double phase = 0.4 * static_cast<double>(s) + 0.1 * static_cast<double>(bytes.next() % 10);
      double v = positive ? (std::sin(phase) >= 0 ? 1.0 : -1.0) : std::sin(phase);
      v += (static_cast<double>(bytes.next()) - 127.5) / 512.0;
      char buf[32];
      std::snprintf(buf, sizeof buf, "\t%.6f", v);
      text += buf;
    }
    text += "\n";
  }
  write_data_file(path, text);
}

// <dir>/cora.content and cora.cites: `papers` papers with 12 binary features
// (feature i % 3 always set), 3 classes, about two citations each.
inline void write_cora(const std::string& dir, int papers) {
  std::string content, cites;
  Lcg rng(4242);
  const char* labels[3] = {"A", "B", "C"};
  for (int i = 0; i < papers; ++i) {
    content += std::to_string(100 + i);
    for (int k = 0; k < 12; ++k) content += (rng.next() >> 30) == 0 || k == i % 3 ? "\t1" : "\t0";
    content += std::string("\t") + labels[i % 3] + "\n";
  }
  for (int i = 0; i < papers; ++i)
    for (int e = 0; e < 2; ++e) {
      const int j = static_cast<int>(rng.next() % static_cast<uint32_t>(papers));
      if (j != i) cites += std::to_string(100 + i) + "\t" + std::to_string(100 + j) + "\n";
    }
  write_data_file(dir + "/cora.content", content);
  write_data_file(dir + "/cora.cites", cites);
}

// <dir>/fra.txt with `pairs` lines "English.<TAB>French.<TAB>attribution": 2-5 of 12
// words, each translated word for word.
inline void write_fra_pairs(const std::string& dir, int pairs) {
  const char* en[] = {"red",  "blue", "green", "cat", "dog",   "bird",
                      "eats", "sees", "likes", "big", "small", "old"};
  const char* fr[] = {"rouge", "bleu", "vert", "chat",  "chien", "oiseau",
                      "mange", "voit", "aime", "grand", "petit", "vieux"};
  Lcg rng(99);
  std::string text;
  for (int i = 0; i < pairs; ++i) {
    const int len = 2 + static_cast<int>(rng.next() >> 30);
    std::string e, f;
    for (int k = 0; k < len; ++k) {
      const int w = static_cast<int>((rng.next() >> 16) % 12);
      e += std::string(k ? " " : "") + en[w];
      f += std::string(k ? " " : "") + fr[w];
    }
    text += e + ".\t" + f + ".\tCC-BY 2.0 (France) Attribution: tatoeba.org\n";
  }
  write_data_file(dir + "/fra.txt", text);
}

}  // namespace emu::test
