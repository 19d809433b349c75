// CIFAR-10 binary loader: decoding, normalisation, crop/flip augmentation and
// its determinism, errors. The files are written here in the canonical format.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "data/cifar10.h"
#include "data/loader.h"
#include "test_data_util.h"
#include "test_util.h"

using namespace emu;
using emu::test::TempDir;

namespace {

constexpr int kRecord = 3073;
const float kMean[3] = {0.4914f, 0.4822f, 0.4465f};
const float kStd[3] = {0.2470f, 0.2435f, 0.2616f};

struct Written {
  std::vector<std::vector<uint8_t>> images;  // (3, 32, 32) each
  std::vector<int> labels;
};

// Records with labels (first_label + r) % 10 and pixels 1..255 (never 0, so a
// padding pixel is recognisable after a crop).
std::vector<uint8_t> records(int count, int first_label, uint64_t seed, Written& w) {
  emu::test::ByteSource bytes(seed);
  std::vector<uint8_t> out;
  for (int r = 0; r < count; ++r) {
    int label = (first_label + r) % 10;
    out.push_back(static_cast<uint8_t>(label));
    std::vector<uint8_t> img(3072);
    for (auto& p : img) p = static_cast<uint8_t>(1 + bytes.next() % 255);
    out.insert(out.end(), img.begin(), img.end());
    w.images.push_back(img);
    w.labels.push_back(label);
  }
  return out;
}

// Train files data_batch_1..5 with 3, 2, 2, 1, 2 records; test_batch with 4.
void write_cifar(const std::string& folder, Written& train, Written& test) {
  const int counts[5] = {3, 2, 2, 1, 2};
  for (int i = 0; i < 5; ++i)
    emu::test::write_file(folder + "/data_batch_" + std::to_string(i + 1) + ".bin",
                          records(counts[i], 3 * i, 100 + i, train));
  emu::test::write_file(folder + "/test_batch.bin", records(4, 7, 200, test));
}

// dst(c, y, x) for crop offset (dy, dx) into the image padded by 4 and flip.
std::vector<float> expected_image(const std::vector<uint8_t>& img, int dy, int dx, bool flip) {
  std::vector<float> out(3072);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) {
        int sx0 = flip ? 31 - x : x;
        int sy = y + dy - 4, sx = sx0 + dx - 4;
        uint8_t p = (sy >= 0 && sy < 32 && sx >= 0 && sx < 32) ? img[c * 1024 + sy * 32 + sx] : 0;
        out[c * 1024 + y * 32 + x] = emu::test::normalized_pixel(p, kMean[c], kStd[c]);
      }
  return out;
}

std::vector<float> example(const data::Batch& b, int i) {
  std::vector<float> x = emu::test::field(b, "x");
  return std::vector<float>(x.begin() + i * 3072, x.begin() + (i + 1) * 3072);
}

}  // namespace

TEST_CASE("CIFAR-10 records decode to the written labels and normalised pixels", "[data][cifar]") {
  TempDir dir;
  Written train, test;
  write_cifar(dir / "cifar-10-batches-bin", train, test);
  data::Cifar10Options o;
  o.root = dir.path();  // the parent of cifar-10-batches-bin/ is accepted too
  auto ds = data::load_cifar10(o, true);
  REQUIRE(ds->size() == 10);
  CHECK(ds->meta() ==
        std::map<std::string, int64_t>{{"classes", 10}, {"channels", 3}, {"height", 32}, {"width", 32}});
  data::Batch b = ds->get({0, 3, 9}, 1, 0);
  CHECK(b.size == 3);
  CHECK(b.at("x").shape() == Shape{3, 3, 32, 32});
  CHECK(emu::test::field(b, "y") ==
        std::vector<float>{float(train.labels[0]), float(train.labels[3]), float(train.labels[9])});
  const int picked[3] = {0, 3, 9};
  for (int i = 0; i < 3; ++i) {
    std::vector<float> got = example(b, i);
    CHECK(emu::test::mismatch(got, expected_image(train.images[picked[i]], 4, 4, false)) == "");
    // Against float64: three roundings, the first (p / 255) carried through the
    // cancelling subtraction, so bound the error by the operands' magnitudes.
    for (int k = 0; k < 3072; k += 97) {
      int c = k / 1024;
      double x = train.images[picked[i]][k] / 255.0;
      double exact = (x - double(kMean[c])) / double(kStd[c]);
      double bound = (x + std::fabs(x - kMean[c])) / kStd[c] * 0x1p-24 + std::fabs(exact) * 0x1p-24;
      CHECK(std::fabs(got[k] - exact) <= bound);
    }
  }
  // Test split: test_batch.bin.
  auto ts = data::load_cifar10(o, false);
  REQUIRE(ts->size() == 4);
  data::Batch tb = ts->get({2}, 0, 0);
  CHECK(emu::test::field(tb, "y") == std::vector<float>{float(test.labels[2])});
  CHECK(emu::test::mismatch(example(tb, 0), expected_image(test.images[2], 4, 4, false)) == "");
  // normalize off: p / 255.
  o.normalize = data::PixelNormalize{};
  auto raw = data::load_cifar10(o, false);
  CHECK(emu::test::field(raw->get({0}, 0, 0), "x")[5] == static_cast<float>(test.images[0][5]) / 255.0f);
}

TEST_CASE("CIFAR-10 crop and flip: keyed by (seed, epoch, index), plausible frequencies", "[data][cifar]") {
  TempDir dir;
  Written train, test;
  write_cifar(dir.path(), train, test);
  data::Cifar10Options o;
  o.root = dir.path();
  o.augment.crop_padding = 4;
  o.augment.hflip = true;
  auto ds = data::load_cifar10(o, true);

  int flips = 0, centred = 0, total = 0;
  std::set<int> dys, dxs;
  for (int epoch = 0; epoch < 40; ++epoch) {
    data::Batch b = ds->get({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 7, epoch);
    for (int i = 0; i < 10; ++i) {
      std::vector<float> got = example(b, i);
      int matches = 0, mdy = -1, mdx = -1;
      bool mflip = false;
      for (int dy = 0; dy <= 8; ++dy)
        for (int dx = 0; dx <= 8; ++dx)
          for (bool flip : {false, true})
            if (emu::test::mismatch(got, expected_image(train.images[i], dy, dx, flip)).empty()) {
              ++matches;
              mdy = dy, mdx = dx, mflip = flip;
            }
      REQUIRE(matches == 1);  // every output is exactly one crop/flip of the written image
      data::CropFlip t = data::draw_crop_flip(o.augment, 7, epoch, i);
      CHECK(t.dy == mdy);
      CHECK(t.dx == mdx);
      CHECK(t.flip == mflip);
      flips += mflip;
      centred += (mdy == 4 && mdx == 4);
      dys.insert(mdy);
      dxs.insert(mdx);
      ++total;
    }
  }
  // 400 draws: flips ~ Binomial(400, 1/2), centred crops ~ 400/81.
  CHECK(flips > 150);
  CHECK(flips < 250);
  CHECK(centred < 20);
  CHECK(dys.size() == 9);
  CHECK(dxs.size() == 9);

  // Same (seed, epoch, index) -> same bits whatever the batch; another epoch or seed differs.
  data::Batch alone = ds->get({5}, 7, 3);
  data::Batch mixed = ds->get({9, 5, 0}, 7, 3);
  CHECK(emu::test::mismatch(example(alone, 0), example(mixed, 1)) == "");
  int differ_epoch = 0, differ_seed = 0;
  for (int i = 0; i < 10; ++i) {
    differ_epoch +=
        !emu::test::mismatch(example(ds->get({i}, 7, 3), 0), example(ds->get({i}, 7, 4), 0)).empty();
    differ_seed +=
        !emu::test::mismatch(example(ds->get({i}, 7, 3), 0), example(ds->get({i}, 8, 3), 0)).empty();
  }
  CHECK(differ_epoch >= 8);
  CHECK(differ_seed >= 8);

  // Through the loader: the same batches with 0, 1 and 3 workers.
  auto epoch_bits = [&](int workers) {
    data::DataLoader loader(*ds, 3, true, false, 11, workers);
    std::vector<float> all;
    for (int epoch = 0; epoch < 2; ++epoch) {
      loader.start_epoch(epoch);
      data::Batch b;
      while (loader.next(b)) {
        auto x = emu::test::field(b, "x");
        auto y = emu::test::field(b, "y");
        all.insert(all.end(), x.begin(), x.end());
        all.insert(all.end(), y.begin(), y.end());
      }
    }
    return all;
  };
  std::vector<float> w0 = epoch_bits(0);
  CHECK(emu::test::mismatch(epoch_bits(1), w0) == "");
  CHECK(emu::test::mismatch(epoch_bits(3), w0) == "");

  // The test set is never augmented.
  auto ts = data::load_cifar10(o, false);
  CHECK(emu::test::mismatch(example(ts->get({1}, 7, 0), 0), expected_image(test.images[1], 4, 4, false)) ==
        "");
}

TEST_CASE("CIFAR-10 errors name the file, the problem and the download URL", "[data][cifar]") {
  TempDir dir;
  Written train, test;
  data::Cifar10Options o;
  o.root = dir.path();
  // Missing file.
  CHECK_THROWS_WITH(data::load_cifar10(o, false), Catch::Contains(dir / "test_batch.bin") &&
                                                      Catch::Contains("not found") &&
                                                      Catch::Contains("cifar-10-binary.tar.gz"));
  write_cifar(dir.path(), train, test);
  std::filesystem::remove(dir / "data_batch_4.bin");
  CHECK_THROWS_WITH(data::load_cifar10(o, true),
                    Catch::Contains("data_batch_4.bin") && Catch::Contains("not found"));
  // Truncated record.
  std::vector<uint8_t> bytes = records(2, 0, 5, train);
  bytes.resize(bytes.size() - 100);
  emu::test::write_file(dir / "test_batch.bin", bytes);
  CHECK_THROWS_WITH(data::load_cifar10(o, false),
                    Catch::Contains("test_batch.bin") && Catch::Contains("truncated record") &&
                        Catch::Contains("https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"));
  // A label out of range (e.g. a CIFAR-100 file).
  bytes = records(2, 0, 5, train);
  bytes[kRecord] = 17;
  emu::test::write_file(dir / "test_batch.bin", bytes);
  CHECK_THROWS_WITH(data::load_cifar10(o, false), Catch::Contains("record 1 has label 17"));
}
