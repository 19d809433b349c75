#include "data/image_folder.h"

#include <cctype>
#include <stdexcept>

#include "data/errors.h"
#include "data/file_io.h"

// stb_image's implementation lives here, with static linkage so that no other
// translation unit's copy can clash with it. PNG and JPEG only.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_NO_STDIO_DEPRECATION
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace emu::data {
namespace {

bool is_image_file(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto ends = [&](const char* ext) {
    std::string e(ext);
    return lower.size() > e.size() && lower.compare(lower.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".png") || ends(".jpg") || ends(".jpeg");
}

const char* kImageWhat = "a PNG or JPEG image";

}  // namespace

ImageFolderDataset::ImageFolderDataset(const ImageFolderOptions& options, std::vector<std::string> files,
                                       std::vector<int64_t> labels, std::vector<std::string> classes,
                                       ImageShape shape)
    : ImageDataset("image folder " + join_path(options.root, options.split), shape,
                   static_cast<int64_t>(classes.size()), options.normalize, options.augment),
      files_(std::move(files)),
      labels_(std::move(labels)),
      classes_(std::move(classes)) {}

void ImageFolderDataset::pixels(int64_t index, uint8_t* out) const {
  const std::string& path = files_[static_cast<size_t>(index)];
  const ImageShape& s = shape();
  int w = 0, h = 0, c = 0;
  stbi_uc* data = stbi_load(path.c_str(), &w, &h, &c, static_cast<int>(s.channels));
  if (data == nullptr)
    file_error(path,
               std::string("cannot decode: ") + stbi_failure_reason() + " (expected " + kImageWhat + ")", "");
  if (w != s.width || h != s.height) {
    stbi_image_free(data);
    file_error(path,
               "image is " + std::to_string(w) + "x" + std::to_string(h) +
                   " (width x height), the dataset's " + std::to_string(s.width) + "x" +
                   std::to_string(s.height) + "; images must all be one size",
               "");
  }
  // stb_image gives (H, W, C) interleaved; the batch wants (C, H, W) planes.
  const int64_t plane = s.height * s.width;
  for (int64_t i = 0; i < plane; ++i)
    for (int64_t ch = 0; ch < s.channels; ++ch) out[ch * plane + i] = data[i * s.channels + ch];
  stbi_image_free(data);
}

std::unique_ptr<ImageFolderDataset> load_image_folder(const ImageFolderOptions& options) {
  if (options.channels != 1 && options.channels != 3)
    throw std::invalid_argument("image folder: channels must be 1 or 3, got " +
                                std::to_string(options.channels));
  std::string class_root = join_path(options.root, "train");
  std::string split_root = join_path(options.root, options.split);
  if (!dir_exists(class_root))
    file_error(class_root, "folder not found (expected one sub-folder per class holding PNG/JPEG images)",
               "");
  if (!dir_exists(split_root))
    file_error(split_root, "folder not found (expected one sub-folder per class holding PNG/JPEG images)",
               "");
  std::vector<std::string> classes = list_dir(class_root, true);
  if (classes.empty()) file_error(class_root, "no class sub-folders (expected <class>/<image files>)", "");

  std::vector<std::string> files;
  std::vector<int64_t> labels;
  for (const std::string& cls : list_dir(split_root, true)) {
    int64_t label = -1;
    for (size_t k = 0; k < classes.size(); ++k)
      if (classes[k] == cls) label = static_cast<int64_t>(k);
    if (label < 0)
      file_error(join_path(split_root, cls),
                 "class folder not present in " + class_root +
                     " (classes: " + std::to_string(classes.size()) + " there)",
                 "");
    std::string dir = join_path(split_root, cls);
    for (const std::string& name : list_dir(dir, false)) {
      if (!is_image_file(name)) continue;
      files.push_back(join_path(dir, name));
      labels.push_back(label);
    }
  }
  if (files.empty()) file_error(split_root, "no .png/.jpg/.jpeg images in its class folders", "");

  // Sizes from the headers only; every image must match the first.
  ImageShape shape{options.channels, 0, 0};
  for (size_t i = 0; i < files.size(); ++i) {
    int w = 0, h = 0, c = 0;
    if (!stbi_info(files[i].c_str(), &w, &h, &c))
      file_error(
          files[i],
          std::string("not a readable image: ") + stbi_failure_reason() + " (expected " + kImageWhat + ")",
          "");
    if (i == 0) {
      shape.width = w;
      shape.height = h;
    } else if (w != shape.width || h != shape.height) {
      file_error(files[i],
                 "image is " + std::to_string(w) + "x" + std::to_string(h) + " (width x height) but " +
                     files[0] + " is " + std::to_string(shape.width) + "x" + std::to_string(shape.height) +
                     "; images must all be one size (resize them beforehand)",
                 "");
    }
  }
  return std::make_unique<ImageFolderDataset>(options, std::move(files), std::move(labels),
                                              std::move(classes), shape);
}

}  // namespace emu::data
