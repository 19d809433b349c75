// CIFAR-10, binary version (https://www.cs.toronto.edu/~kriz/cifar.html):
// cifar-10-batches-bin/data_batch_1.bin .. data_batch_5.bin (training, 50000
// images) and test_batch.bin (10000). Each file is a sequence of 3073-byte
// records: 1 label byte (0..9), then 3072 pixel bytes, the 32x32 red plane,
// then green, then blue, rows top to bottom (i.e. (C, H, W)).
#pragma once

#include <memory>
#include <string>

#include "data/image_dataset.h"

namespace emu::data {

struct Cifar10Options {
  // The folder holding the .bin files, or its parent (holding cifar-10-batches-bin/).
  std::string root;
  PixelNormalize normalize = cifar10_normalize();
  ImageAugment augment;  // applied only when loading the training files
};

constexpr int64_t kCifar10RecordBytes = 1 + 3 * 32 * 32;

// The training set (data_batch_1..5 in that order) or the test set; files of
// any whole number of records are accepted (tests write small ones).
std::unique_ptr<ImageDataset> load_cifar10(const Cifar10Options& options, bool train);

}  // namespace emu::data
