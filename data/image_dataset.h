// Labelled images of one size: the shared half of the CIFAR-10, MNIST and
// image-folder loaders. A subclass supplies the 8-bit pixels and label of an
// example; this class turns a list of examples into the batch
//   "x" (N, C, H, W) normalised floats, "y" (N) class indices as floats,
// applying the augmentation (when enabled) keyed by (seed, epoch, example index).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image_pixels.h"

namespace emu::data {

struct ImageShape {
  int64_t channels = 0, height = 0, width = 0;
  int64_t numel() const { return channels * height * width; }
};

class ImageDataset : public Dataset {
 public:
  ImageDataset(std::string name, ImageShape shape, int64_t classes, PixelNormalize normalize,
               ImageAugment augment);

  Batch get(const std::vector<int64_t>& indices, uint64_t seed, int64_t epoch) const override;
  // classes, channels, height, width
  std::map<std::string, int64_t> meta() const override;
  std::string describe() const override;

  const ImageShape& shape() const { return shape_; }
  const ImageAugment& augment() const { return augment_; }
  // Example i's pixels (C, H, W) into out[0 .. C*H*W).
  virtual void pixels(int64_t index, uint8_t* out) const = 0;
  virtual int64_t label(int64_t index) const = 0;

 private:
  std::string name_;
  ImageShape shape_;
  int64_t classes_;
  PixelNormalize normalize_;
  ImageAugment augment_;
  std::vector<float> table_;
};

// Images held in memory as bytes (CIFAR-10: 150 MB for the training set).
class InMemoryImages : public ImageDataset {
 public:
  // pixels: size() x (C, H, W); labels: size() values in [0, classes).
  InMemoryImages(std::string name, ImageShape shape, int64_t classes, std::vector<uint8_t> pixels,
                 std::vector<uint8_t> labels, PixelNormalize normalize, ImageAugment augment);
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  void pixels(int64_t index, uint8_t* out) const override;
  int64_t label(int64_t index) const override { return labels_[static_cast<size_t>(index)]; }

 private:
  std::vector<uint8_t> pixels_;
  std::vector<uint8_t> labels_;
};

// Throws std::out_of_range naming the index and the dataset size.
void check_index(int64_t index, int64_t size, const std::string& dataset);

}  // namespace emu::data
