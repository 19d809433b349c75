#include "data/cifar10.h"

#include "data/errors.h"
#include "data/file_io.h"

namespace emu::data {
namespace {

const char* const kClassNames = "airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck";

std::string cifar_folder(const std::string& root) {
  std::string sub = join_path(root, "cifar-10-batches-bin");
  if (file_exists(join_path(sub, "data_batch_1.bin")) || file_exists(join_path(sub, "test_batch.bin")))
    return sub;
  return root;
}

// Appends the records of one file to pixels/labels.
void read_batch_file(const std::string& path, std::vector<uint8_t>& pixels, std::vector<uint8_t>& labels) {
  const std::string what =
      "CIFAR-10 binary records of 3073 bytes: 1 label byte 0..9, then 3072 pixel bytes (3x32x32, C,H,W)";
  std::vector<uint8_t> bytes = read_bytes(path, what, kCifar10Url);
  if (bytes.empty()) file_error(path, "empty file (expected " + what + ")", kCifar10Url);
  if (bytes.size() % kCifar10RecordBytes != 0)
    file_error(path,
               "truncated record: " + std::to_string(bytes.size()) +
                   " bytes is not a whole number of 3073-byte records (" +
                   std::to_string(bytes.size() / kCifar10RecordBytes) + " records and " +
                   std::to_string(bytes.size() % kCifar10RecordBytes) + " bytes; expected " + what + ")",
               kCifar10Url);
  size_t records = bytes.size() / kCifar10RecordBytes;
  for (size_t r = 0; r < records; ++r) {
    const uint8_t* rec = bytes.data() + r * kCifar10RecordBytes;
    if (rec[0] > 9)
      file_error(path,
                 "record " + std::to_string(r) + " has label " + std::to_string(rec[0]) +
                     " (expected 0..9: " + kClassNames +
                     "); not a CIFAR-10 binary file (CIFAR-100's records are 3074 bytes)",
                 kCifar10Url);
    labels.push_back(rec[0]);
    pixels.insert(pixels.end(), rec + 1, rec + kCifar10RecordBytes);
  }
}

}  // namespace

std::unique_ptr<ImageDataset> load_cifar10(const Cifar10Options& options, bool train) {
  std::string folder = cifar_folder(options.root);
  std::string first = join_path(folder, train ? "data_batch_1.bin" : "test_batch.bin");
  if (!file_exists(first))
    file_error(first,
               "file not found (nor in " + join_path(options.root, "cifar-10-batches-bin") +
                   "/; expected the CIFAR-10 binary version's .bin files)",
               kCifar10Url);
  std::vector<uint8_t> pixels, labels;
  if (train) {
    for (int i = 1; i <= 5; ++i)
      read_batch_file(join_path(folder, "data_batch_" + std::to_string(i) + ".bin"), pixels, labels);
  } else {
    read_batch_file(join_path(folder, "test_batch.bin"), pixels, labels);
  }
  return std::make_unique<InMemoryImages>(train ? "CIFAR-10 train" : "CIFAR-10 test", ImageShape{3, 32, 32},
                                          10, std::move(pixels), std::move(labels), options.normalize,
                                          train ? options.augment : ImageAugment{});
}

}  // namespace emu::data
