// MNIST IDX files, gzipped (as distributed) and plain, written here.
#include <catch2/catch.hpp>

#include "data/mnist.h"
#include "test_data_util.h"
#include "test_util.h"

using namespace emu;
using emu::test::TempDir;

namespace {

void put32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

struct Idx {
  std::vector<uint8_t> images, labels;  // whole files
  std::vector<uint8_t> pixels, label_values;
};

Idx make_idx(uint32_t n, uint32_t rows, uint32_t cols, uint64_t seed) {
  Idx f;
  emu::test::ByteSource b(seed);
  put32(f.images, 0x00000803);
  put32(f.images, n);
  put32(f.images, rows);
  put32(f.images, cols);
  put32(f.labels, 0x00000801);
  put32(f.labels, n);
  for (uint32_t i = 0; i < n * rows * cols; ++i) f.pixels.push_back(b.next());
  for (uint32_t i = 0; i < n; ++i) f.label_values.push_back(static_cast<uint8_t>((i * 7 + 3) % 10));
  f.images.insert(f.images.end(), f.pixels.begin(), f.pixels.end());
  f.labels.insert(f.labels.end(), f.label_values.begin(), f.label_values.end());
  return f;
}

}  // namespace

TEST_CASE("MNIST: gzipped and plain IDX decode to the written pixels", "[data][mnist]") {
  TempDir dir;
  Idx t10k = make_idx(6, 4, 3, 1);
  emu::test::write_gzip(dir / "t10k-images-idx3-ubyte.gz", t10k.images);
  emu::test::write_gzip(dir / "t10k-labels-idx1-ubyte.gz", t10k.labels);
  Idx train = make_idx(5, 4, 3, 2);
  emu::test::write_file(dir / "train-images-idx3-ubyte", train.images);
  emu::test::write_file(dir / "train-labels-idx1-ubyte", train.labels);

  data::MnistOptions o;
  o.root = dir.path();
  auto ds = data::load_mnist(o);
  REQUIRE(ds->size() == 6);
  CHECK(ds->meta() ==
        std::map<std::string, int64_t>{{"classes", 10}, {"channels", 1}, {"height", 4}, {"width", 3}});
  data::Batch b = ds->get({5, 0}, 0, 0);
  CHECK(b.at("x").shape() == Shape{2, 1, 4, 3});
  CHECK(emu::test::field(b, "y") ==
        std::vector<float>{float(t10k.label_values[5]), float(t10k.label_values[0])});
  std::vector<float> x = emu::test::field(b, "x");
  for (int k = 0; k < 12; ++k) {
    CHECK(emu::test::bits(x[k]) ==
          emu::test::bits(emu::test::normalized_pixel(t10k.pixels[5 * 12 + k], 0.1307f, 0.3081f)));
    CHECK(emu::test::bits(x[12 + k]) ==
          emu::test::bits(emu::test::normalized_pixel(t10k.pixels[k], 0.1307f, 0.3081f)));
  }

  o.set = "train";
  o.normalize = data::PixelNormalize{};
  o.pad = 2;
  auto tr = data::load_mnist(o);
  REQUIRE(tr->size() == 5);
  CHECK(tr->meta()["height"] == 8);
  CHECK(tr->meta()["width"] == 7);
  std::vector<float> px = emu::test::field(tr->get({3}, 0, 0), "x");
  for (int y = 0; y < 8; ++y)
    for (int c = 0; c < 7; ++c) {
      bool inside = y >= 2 && y < 6 && c >= 2 && c < 5;
      float want = inside ? static_cast<float>(train.pixels[3 * 12 + (y - 2) * 3 + (c - 2)]) / 255.0f : 0.0f;
      CHECK(px[y * 7 + c] == want);
    }
}

TEST_CASE("MNIST errors: missing file, bad magic, truncated data, count mismatch", "[data][mnist]") {
  TempDir dir;
  data::MnistOptions o;
  o.root = dir.path();
  CHECK_THROWS_WITH(data::load_mnist(o), Catch::Contains("t10k-images-idx3-ubyte.gz") &&
                                             Catch::Contains("not found") &&
                                             Catch::Contains("yann.lecun.com/exdb/mnist"));
  Idx f = make_idx(4, 2, 2, 3);
  emu::test::write_gzip(dir / "t10k-labels-idx1-ubyte.gz", f.labels);

  std::vector<uint8_t> bad = f.images;
  bad[3] = 0x01;  // a labels magic in the images file
  emu::test::write_gzip(dir / "t10k-images-idx3-ubyte.gz", bad);
  CHECK_THROWS_WITH(data::load_mnist(o),
                    Catch::Contains("t10k-images-idx3-ubyte.gz") &&
                        Catch::Contains("bad magic number 0x00000801, expected 0x00000803"));

  std::vector<uint8_t> cut(f.images.begin(), f.images.end() - 3);
  emu::test::write_gzip(dir / "t10k-images-idx3-ubyte.gz", cut);
  CHECK_THROWS_WITH(data::load_mnist(o),
                    Catch::Contains("truncated") && Catch::Contains("16 data bytes, file has 13"));

  // A gzip stream cut short.
  emu::test::write_gzip(dir / "t10k-images-idx3-ubyte.gz", f.images);
  {
    auto size = std::filesystem::file_size(dir / "t10k-images-idx3-ubyte.gz");
    std::filesystem::resize_file(dir / "t10k-images-idx3-ubyte.gz", size - 10);
  }
  CHECK_THROWS_WITH(data::load_mnist(o),
                    Catch::Contains("t10k-images-idx3-ubyte.gz: damaged or truncated gzip data: "
                                    "unexpected end of file"));

  emu::test::write_gzip(dir / "t10k-images-idx3-ubyte.gz", make_idx(3, 2, 2, 3).images);
  CHECK_THROWS_WITH(data::load_mnist(o), Catch::Contains("has 4 labels but") && Catch::Contains("3 images"));

  // A header whose three sizes multiply past 64 bits (found by tests/fuzz/fuzz_mnist.cpp):
  // refused as more than the file holds, without forming the product.
  std::vector<uint8_t> huge;
  for (uint32_t v : {0x00000803u, 0xffffffffu, 0xffffffffu, 0xffffffffu}) put32(huge, v);
  huge.resize(huge.size() + 8, 0);
  emu::test::write_gzip(dir / "t10k-images-idx3-ubyte.gz", huge);
  CHECK_THROWS_WITH(data::load_mnist(o),
                    Catch::Contains("truncated: header announces 4294967295 x 4294967295 x "
                                    "4294967295 data bytes, more than the file's 8"));

  // Zero images of 4227858403 x 4294967267 pixels (the fuzzer's find): no data to be short of, but
  // an image size past 64 bits; refused by its sides, with the labels file of zero labels beside it.
  std::vector<uint8_t> empty_huge, no_labels;
  for (uint32_t v : {0x00000803u, 0u, 0xfbffffe3u, 0xffffffe3u}) put32(empty_huge, v);
  for (uint32_t v : {0x00000801u, 0u}) put32(no_labels, v);
  emu::test::write_gzip(dir / "t10k-images-idx3-ubyte.gz", empty_huge);
  emu::test::write_gzip(dir / "t10k-labels-idx1-ubyte.gz", no_labels);
  CHECK_THROWS_WITH(data::load_mnist(o), Catch::Contains("t10k-images-idx3-ubyte.gz: images of 4227858403 x "
                                                         "4294967267 pixels (expected 1..65536 each"));
}
