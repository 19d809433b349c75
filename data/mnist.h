// MNIST in LeCun's IDX format (http://yann.lecun.com/exdb/mnist/):
//   <set>-images-idx3-ubyte[.gz]: magic 0x00000803, then big-endian int32 count,
//     rows, cols, then count x rows x cols pixel bytes (0 = background);
//   <set>-labels-idx1-ubyte[.gz]: magic 0x00000801, int32 count, count label bytes 0..9;
// <set> is "train" (60000) or "t10k" (10000). Gzipped files (as distributed) are
// read through zlib; plain ones as they are.
#pragma once

#include <memory>
#include <string>

#include "data/image_dataset.h"

namespace emu::data {

struct MnistOptions {
  std::string root;          // the folder holding the IDX files
  std::string set = "t10k";  // "train" or "t10k"
  PixelNormalize normalize = mnist_normalize();
  ImageAugment augment;
  // Zero pixels added around each image (LeNet-5's 32x32 input is pad 2).
  int64_t pad = 0;
};

constexpr uint32_t kIdxImagesMagic = 0x00000803;
constexpr uint32_t kIdxLabelsMagic = 0x00000801;

std::unique_ptr<ImageDataset> load_mnist(const MnistOptions& options);

}  // namespace emu::data
