#include "data/image_pixels.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "data/draws.h"
#include "numerics/fp32_ops.h"

namespace emu::data {

std::vector<float> PixelNormalize::table(int64_t channels) const {
  std::vector<float> t(static_cast<size_t>(channels) * 256);
  for (int64_t c = 0; c < channels; ++c)
    for (int p = 0; p < 256; ++p) {
      float x = fp32::div(static_cast<float>(p), 255.0f);
      if (!mean.empty())
        x = fp32::div(fp32::sub(x, mean[static_cast<size_t>(c)]), std[static_cast<size_t>(c)]);
      t[static_cast<size_t>(c * 256 + p)] = x;
    }
  return t;
}

void PixelNormalize::check(int64_t channels, const std::string& what) const {
  if (mean.empty() && std.empty()) return;
  if (static_cast<int64_t>(mean.size()) != channels || static_cast<int64_t>(std.size()) != channels)
    throw std::invalid_argument(what + ": mean and std need one value per channel (" +
                                std::to_string(channels) + "), got " + std::to_string(mean.size()) + " and " +
                                std::to_string(std.size()));
  for (float s : std)
    if (!(s != 0.0f)) throw std::invalid_argument(what + ": std must be non-zero");
}

namespace {

std::string number_list(const std::vector<float>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    // The shortest decimal that reads back as the same binary32.
    char buf[32];
    for (int digits = 1; digits <= 9; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v[i]));
      if (std::strtof(buf, nullptr) == v[i]) break;
    }
    s += (i ? ", " : "") + std::string(buf);
  }
  return s + "]";
}

}  // namespace

std::string PixelNormalize::describe() const {
  if (mean.empty()) return "p/255";
  return "(p/255 - " + number_list(mean) + ") / " + number_list(std);
}

PixelNormalize cifar10_normalize() { return {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}}; }

PixelNormalize mnist_normalize() { return {{0.1307f}, {0.3081f}}; }

std::string ImageAugment::describe() const {
  if (!enabled()) return "no augmentation";
  std::string s;
  if (crop_padding > 0) s += "random crop (padding " + std::to_string(crop_padding) + ")";
  if (hflip) s += std::string(s.empty() ? "" : " + ") + "horizontal flip";
  return s;
}

CropFlip draw_crop_flip(const ImageAugment& aug, uint64_t seed, int64_t epoch, int64_t index) {
  CropFlip t;
  t.dy = t.dx = aug.crop_padding;
  uint64_t stream = data_stream(DataDraw::Augment, epoch);
  uint64_t base = 4 * static_cast<uint64_t>(index);
  if (aug.crop_padding > 0) {
    t.dy = uniform_below(philox_draw(seed, stream, base + 0), 2 * aug.crop_padding + 1);
    t.dx = uniform_below(philox_draw(seed, stream, base + 1), 2 * aug.crop_padding + 1);
  }
  if (aug.hflip) t.flip = (philox_draw(seed, stream, base + 2) >> 31) != 0;
  return t;
}

void render_image(const uint8_t* src, int64_t channels, int64_t height, int64_t width, const CropFlip* t,
                  int64_t padding, const float* table, float* dst) {
  int64_t plane = height * width;
  if (t == nullptr) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* tc = table + c * 256;
      for (int64_t i = 0; i < plane; ++i) dst[c * plane + i] = tc[src[c * plane + i]];
    }
    return;
  }
  for (int64_t c = 0; c < channels; ++c) {
    const float* tc = table + c * 256;
    for (int64_t y = 0; y < height; ++y) {
      int64_t sy = y + t->dy - padding;
      float* row = dst + c * plane + y * width;
      for (int64_t x = 0; x < width; ++x) {
        int64_t sx = (t->flip ? width - 1 - x : x) + t->dx - padding;
        bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
        row[x] = tc[inside ? src[c * plane + sy * width + sx] : 0];
      }
    }
  }
}

}  // namespace emu::data
