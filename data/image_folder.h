// Images in class folders, the layout of torchvision's ImageFolder:
//   <root>/<split>/<class>/<file>.png|.jpg|.jpeg
// Classes are the sub-folders of <root>/train sorted by name (bytewise), so a
// class has the same index in every split; files are sorted by name within a
// class. Other files and hidden entries are ignored. All images must have the
// same width and height (no resizing: an image of another size is an error
// naming it). Decoding (stb_image) happens in get(), so loader workers overlap
// it with training.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/image_dataset.h"

namespace emu::data {

struct ImageFolderOptions {
  std::string root;
  std::string split = "train";  // the sub-folder of root to read
  int64_t channels = 3;         // 1 (grey) or 3 (RGB); stb_image converts
  PixelNormalize normalize;     // default p/255
  ImageAugment augment;
};

class ImageFolderDataset : public ImageDataset {
 public:
  ImageFolderDataset(const ImageFolderOptions& options, std::vector<std::string> files,
                     std::vector<int64_t> labels, std::vector<std::string> classes, ImageShape shape);
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  void pixels(int64_t index, uint8_t* out) const override;
  int64_t label(int64_t index) const override { return labels_[static_cast<size_t>(index)]; }
  const std::vector<std::string>& classes() const { return classes_; }
  const std::string& file(int64_t index) const { return files_[static_cast<size_t>(index)]; }

 private:
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
  std::vector<std::string> classes_;
};

std::unique_ptr<ImageFolderDataset> load_image_folder(const ImageFolderOptions& options);

}  // namespace emu::data
