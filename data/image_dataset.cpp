#include "data/image_dataset.h"

#include <cstring>
#include <stdexcept>

namespace emu::data {

void check_index(int64_t index, int64_t size, const std::string& dataset) {
  if (index < 0 || index >= size)
    throw std::out_of_range(dataset + ": example " + std::to_string(index) + " out of range (size " +
                            std::to_string(size) + ")");
}

ImageDataset::ImageDataset(std::string name, ImageShape shape, int64_t classes, PixelNormalize normalize,
                           ImageAugment augment)
    : name_(std::move(name)),
      shape_(shape),
      classes_(classes),
      normalize_(std::move(normalize)),
      augment_(augment) {
  normalize_.check(shape.channels, name_);
  table_ = normalize_.table(shape.channels);
}

Batch ImageDataset::get(const std::vector<int64_t>& indices, uint64_t seed, int64_t epoch) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  const int64_t numel = shape_.numel();
  Tensor x = Tensor::zeros({n, shape_.channels, shape_.height, shape_.width});
  Tensor y = Tensor::zeros({n});
  std::vector<uint8_t> buf(static_cast<size_t>(numel));
  for (int64_t i = 0; i < n; ++i) {
    int64_t index = indices[static_cast<size_t>(i)];
    check_index(index, size(), name_);
    pixels(index, buf.data());
    CropFlip t;
    if (augment_.enabled()) t = draw_crop_flip(augment_, seed, epoch, index);
    render_image(buf.data(), shape_.channels, shape_.height, shape_.width, augment_.enabled() ? &t : nullptr,
                 augment_.crop_padding, table_.data(), x.data() + i * numel);
    y.data()[i] = static_cast<float>(label(index));
  }
  Batch b;
  b.tensors["x"] = x;
  b.tensors["y"] = y;
  b.size = n;
  return b;
}

std::map<std::string, int64_t> ImageDataset::meta() const {
  return {{"classes", classes_},
          {"channels", shape_.channels},
          {"height", shape_.height},
          {"width", shape_.width}};
}

std::string ImageDataset::describe() const {
  return name_ + ", " + std::to_string(size()) + " images " + std::to_string(shape_.channels) + "x" +
         std::to_string(shape_.height) + "x" + std::to_string(shape_.width) + ", " +
         std::to_string(classes_) + " classes, normalised " + normalize_.describe() + ", " +
         augment_.describe();
}

InMemoryImages::InMemoryImages(std::string name, ImageShape shape, int64_t classes,
                               std::vector<uint8_t> pixels, std::vector<uint8_t> labels,
                               PixelNormalize normalize, ImageAugment augment)
    : ImageDataset(std::move(name), shape, classes, std::move(normalize), augment),
      pixels_(std::move(pixels)),
      labels_(std::move(labels)) {
  if (pixels_.size() != labels_.size() * static_cast<size_t>(shape.numel()))
    throw std::logic_error("InMemoryImages: pixel and label counts differ");
}

void InMemoryImages::pixels(int64_t index, uint8_t* out) const {
  size_t numel = static_cast<size_t>(shape().numel());
  std::memcpy(out, pixels_.data() + static_cast<size_t>(index) * numel, numel);
}

}  // namespace emu::data
