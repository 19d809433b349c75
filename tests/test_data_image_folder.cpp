// Image folders: PNG/JPEG files in class sub-folders, written here with
// stb_image_write, decoded back to the written pixels.
#include <catch2/catch.hpp>
#include <cmath>

#include "data/image_folder.h"
#include "data/loader.h"
#include "test_data_util.h"
#include "test_util.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

using namespace emu;
using emu::test::TempDir;

namespace {

constexpr int kW = 6, kH = 5;

// An (H, W, C) interleaved image of distinct-looking bytes.
std::vector<uint8_t> make_image(int channels, uint64_t seed) {
  emu::test::ByteSource b(seed);
  std::vector<uint8_t> img(static_cast<size_t>(kW * kH * channels));
  for (auto& p : img) p = b.next();
  return img;
}

void write_png(const std::string& path, const std::vector<uint8_t>& hwc, int w, int h, int channels) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  REQUIRE(stbi_write_png(path.c_str(), w, h, channels, hwc.data(), w * channels) != 0);
}

// (C, H, W) floats p / 255 of an (H, W, C) image.
std::vector<float> chw(const std::vector<uint8_t>& hwc, int channels) {
  std::vector<float> out(hwc.size());
  for (int c = 0; c < channels; ++c)
    for (int i = 0; i < kW * kH; ++i)
      out[c * kW * kH + i] = static_cast<float>(hwc[i * channels + c]) / 255.0f;
  return out;
}

std::vector<float> example(const data::Batch& b, int i, int numel) {
  std::vector<float> x = emu::test::field(b, "x");
  return std::vector<float>(x.begin() + i * numel, x.begin() + (i + 1) * numel);
}

}  // namespace

TEST_CASE("image folder: classes and files sorted by name, PNG pixels exact", "[data][image_folder]") {
  TempDir dir;
  // Written out of order; expected order: ant/a.png, ant/b.png, bee/x.png, cat/1.png, cat/2.png.
  std::map<std::string, std::vector<uint8_t>> imgs;
  const char* files[] = {"cat/2.png", "ant/b.png", "cat/1.png", "bee/x.png", "ant/a.png"};
  uint64_t seed = 1;
  for (const char* f : files) {
    imgs[f] = make_image(3, seed++);
    write_png(dir / (std::string("train/") + f), imgs[f], kW, kH, 3);
  }
  emu::test::write_text(dir / "train/ant/notes.txt", "not an image");  // ignored
  imgs["test/bee/q.png"] = make_image(3, 50);
  write_png(dir / "test/bee/q.png", imgs["test/bee/q.png"], kW, kH, 3);

  data::ImageFolderOptions o;
  o.root = dir.path();
  auto ds = data::load_image_folder(o);
  REQUIRE(ds->size() == 5);
  CHECK(ds->classes() == std::vector<std::string>{"ant", "bee", "cat"});
  CHECK(ds->meta() ==
        std::map<std::string, int64_t>{{"classes", 3}, {"channels", 3}, {"height", kH}, {"width", kW}});
  data::Batch b = ds->get({0, 1, 2, 3, 4}, 0, 0);
  CHECK(b.at("x").shape() == Shape{5, 3, kH, kW});
  CHECK(emu::test::field(b, "y") == std::vector<float>{0, 0, 1, 2, 2});
  const char* order[] = {"ant/a.png", "ant/b.png", "bee/x.png", "cat/1.png", "cat/2.png"};
  for (int i = 0; i < 5; ++i)
    CHECK(emu::test::mismatch(example(b, i, 3 * kW * kH), chw(imgs[order[i]], 3)) == "");

  // Test split: class indices from train/, so bee is 1 even though test/ has one class.
  o.split = "test";
  auto ts = data::load_image_folder(o);
  REQUIRE(ts->size() == 1);
  data::Batch tb = ts->get({0}, 0, 0);
  CHECK(emu::test::field(tb, "y") == std::vector<float>{1});
  CHECK(emu::test::mismatch(example(tb, 0, 3 * kW * kH), chw(imgs["test/bee/q.png"], 3)) == "");
}

TEST_CASE("image folder: grey PNG, JPEG, normalisation, augmentation", "[data][image_folder]") {
  TempDir dir;
  std::vector<uint8_t> g0 = make_image(1, 7), g1 = make_image(1, 8);
  write_png(dir / "train/a/0.png", g0, kW, kH, 1);
  write_png(dir / "train/b/0.png", g1, kW, kH, 1);
  // A smooth JPEG (lossy, so compared with a tolerance).
  std::vector<uint8_t> smooth(kW * kH);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) smooth[y * kW + x] = static_cast<uint8_t>(100 + 4 * x + 3 * y);
  REQUIRE(stbi_write_jpg((dir / "train/b/1.JPG").c_str(), kW, kH, 1, smooth.data(), 100) != 0);

  data::ImageFolderOptions o;
  o.root = dir.path();
  o.channels = 1;
  o.normalize = {{0.5f}, {0.25f}};
  auto ds = data::load_image_folder(o);
  REQUIRE(ds->size() == 3);
  data::Batch b = ds->get({0, 1, 2}, 0, 0);
  std::vector<float> x = emu::test::field(b, "x");
  for (int i = 0; i < kW * kH; ++i) {
    CHECK(emu::test::bits(x[i]) == emu::test::bits(emu::test::normalized_pixel(g0[i], 0.5f, 0.25f)));
    CHECK(emu::test::bits(x[kW * kH + i]) ==
          emu::test::bits(emu::test::normalized_pixel(g1[i], 0.5f, 0.25f)));
    double jpeg = (x[2 * kW * kH + i] * 0.25 + 0.5) * 255.0;
    CHECK(std::fabs(jpeg - smooth[i]) <= 3.0);
  }

  // Augmentation keyed by (seed, epoch, index), the same through 0 or 2 workers.
  o.augment.crop_padding = 2;
  o.augment.hflip = true;
  auto aug = data::load_image_folder(o);
  auto run = [&](int workers) {
    data::DataLoader loader(*aug, 2, true, false, 5, workers);
    std::vector<float> all;
    for (int e = 0; e < 3; ++e) {
      loader.start_epoch(e);
      data::Batch bb;
      while (loader.next(bb)) {
        auto v = emu::test::field(bb, "x");
        all.insert(all.end(), v.begin(), v.end());
      }
    }
    return all;
  };
  CHECK(emu::test::mismatch(run(2), run(0)) == "");
  data::Batch one = aug->get({1}, 5, 4);
  data::CropFlip t = data::draw_crop_flip(o.augment, 5, 4, 1);
  std::vector<float> got = emu::test::field(one, "x");
  for (int y = 0; y < kH; ++y)
    for (int xx = 0; xx < kW; ++xx) {
      int sy = y + int(t.dy) - 2, sx = (t.flip ? kW - 1 - xx : xx) + int(t.dx) - 2;
      uint8_t p = (sy >= 0 && sy < kH && sx >= 0 && sx < kW) ? g1[sy * kW + sx] : 0;
      CHECK(emu::test::bits(got[y * kW + xx]) ==
            emu::test::bits(emu::test::normalized_pixel(p, 0.5f, 0.25f)));
    }
}

TEST_CASE("image folder errors name the file", "[data][image_folder]") {
  TempDir dir;
  data::ImageFolderOptions o;
  o.root = dir.path();
  CHECK_THROWS_WITH(data::load_image_folder(o),
                    Catch::Contains(dir / "train") && Catch::Contains("not found"));
  write_png(dir / "train/a/0.png", make_image(3, 1), kW, kH, 3);
  std::vector<uint8_t> big(static_cast<size_t>((kW + 1) * kH * 3), 9);
  write_png(dir / "train/a/1.png", big, kW + 1, kH, 3);
  CHECK_THROWS_WITH(data::load_image_folder(o), Catch::Contains(dir / "train/a/1.png") &&
                                                    Catch::Contains("7x5") && Catch::Contains("one size"));
  std::filesystem::remove(dir / "train/a/1.png");
  emu::test::write_text(dir / "train/a/2.png", "this is not a PNG");
  CHECK_THROWS_WITH(data::load_image_folder(o),
                    Catch::Contains(dir / "train/a/2.png") && Catch::Contains("not a readable image"));
  std::filesystem::remove(dir / "train/a/2.png");
  write_png(dir / "test/zebra/0.png", make_image(3, 1), kW, kH, 3);
  o.split = "test";
  CHECK_THROWS_WITH(data::load_image_folder(o), Catch::Contains("zebra") && Catch::Contains("not present"));
}
