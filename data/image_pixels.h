// From 8-bit pixels to the float images a model reads: optional random crop and
// horizontal flip (training augmentation), then normalisation. The order is
// torchvision's RandomCrop(padding) -> RandomHorizontalFlip -> ToTensor ->
// Normalize, so padding pixels are black (0) before normalisation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace emu::data {

// x = (p / 255 - mean[c]) / std[c], each operation one binary32 rounding
// (fp32_ops), as torchvision's ToTensor (div 255) and Normalize (sub, div) do
// in float32. Empty mean/std: x = p / 255.
struct PixelNormalize {
  std::vector<float> mean, std;

  // The 256 values of each channel: table[c * 256 + p].
  std::vector<float> table(int64_t channels) const;
  // Throws unless mean/std are both empty or both have `channels` entries with
  // std != 0; `what` names the setting in the message.
  void check(int64_t channels, const std::string& what) const;
  std::string describe() const;
};

// Per-channel statistics of the CIFAR-10 training images on the 0..1 scale: the
// channel means and (population) standard deviations over all 50000 x 32 x 32
// pixels, rounded to 4 digits. (Some code copies std 0.2023/0.1994/0.2010,
// which are means of per-image stds; these are the dataset's.)
PixelNormalize cifar10_normalize();
// MNIST training-set mean 0.1307 and std 0.3081 (the values of the PyTorch
// MNIST example).
PixelNormalize mnist_normalize();

struct ImageAugment {
  int64_t crop_padding = 0;  // > 0: random crop of the image zero-padded by this on each side
  bool hflip = false;        // random horizontal flip with probability 1/2
  bool enabled() const { return crop_padding > 0 || hflip; }
  std::string describe() const;
};

// One example's augmentation: the crop's top-left corner in the padded image
// (dy, dx in [0, 2 * crop_padding]) and whether it is mirrored.
struct CropFlip {
  int64_t dy = 0, dx = 0;
  bool flip = false;
};

// Example `index`'s crop and flip in `epoch`: with stream =
// data_stream(Augment, epoch) and w_k = philox_draw(seed, stream, 4 * index + k),
// dy = uniform_below(w_0, 2p + 1), dx = uniform_below(w_1, 2p + 1),
// flip = top bit of w_2 (each only when enabled; else dy = dx = p, no flip).
CropFlip draw_crop_flip(const ImageAugment& aug, uint64_t seed, int64_t epoch, int64_t index);

// src: (C, H, W) pixels -> dst: (C, H, W) normalised floats through `table`
// (PixelNormalize::table). With t: dst(c, y, x) = src(c, y + dy - p, x' + dx - p),
// x' = W - 1 - x when flipped else x, pixel 0 outside the image.
void render_image(const uint8_t* src, int64_t channels, int64_t height, int64_t width, const CropFlip* t,
                  int64_t padding, const float* table, float* dst);

}  // namespace emu::data
