#include "data/mnist.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "data/errors.h"
#include "data/file_io.h"

namespace emu::data {
namespace {

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
         uint32_t{b[at + 3]};
}

// <root>/<name>.gz, else <root>/<name>; neither: an error naming both.
std::string idx_path(const std::string& root, const std::string& name, const std::string& what) {
  std::string gz = join_path(root, name + ".gz");
  if (file_exists(gz)) return gz;
  std::string plain = join_path(root, name);
  if (file_exists(plain)) return plain;
  file_error(gz, "file not found (nor " + plain + "; expected " + what + ")", kMnistUrl);
}

std::string hex32(uint32_t v) {
  char s[11];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

// The payload of an IDX file after checking its magic, header and length.
// dims: the header's dimension sizes.
std::vector<uint8_t> read_idx(const std::string& path, uint32_t magic, int ndims, const std::string& what,
                              std::vector<int64_t>& dims) {
  std::vector<uint8_t> bytes = read_bytes(path, what, kMnistUrl);
  size_t header = 4 + 4 * static_cast<size_t>(ndims);
  if (bytes.size() < 4)
    file_error(path,
               "truncated: " + std::to_string(bytes.size()) + " bytes, no IDX header (expected " + what + ")",
               kMnistUrl);
  if (be32(bytes, 0) != magic)
    file_error(path,
               "bad magic number " + hex32(be32(bytes, 0)) + ", expected " + hex32(magic) + " (" + what + ")",
               kMnistUrl);
  if (bytes.size() < header) file_error(path, "truncated IDX header (expected " + what + ")", kMnistUrl);
  dims.clear();
  std::string announced;
  for (int d = 0; d < ndims; ++d) {
    dims.push_back(be32(bytes, 4 + 4 * static_cast<size_t>(d)));
    announced += (d ? " x " : "") + std::to_string(dims.back());
  }
  // Three 32-bit sizes can multiply past 64 bits (found by tests/fuzz/fuzz_mnist.cpp):
  // such a header announces more than any file holds.
  const uint64_t available = bytes.size() - header;
  uint64_t payload = 1;
  bool overflow = false;
  for (int64_t dim : dims) overflow |= __builtin_mul_overflow(payload, static_cast<uint64_t>(dim), &payload);
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) overflow = false, payload = 0;  // no data at all
  if (overflow)
    file_error(path,
               "truncated: header announces " + announced + " data bytes, more than the file's " +
                   std::to_string(available) + " (expected " + what + ")",
               kMnistUrl);
  if (bytes.size() - header < static_cast<size_t>(payload))
    file_error(path,
               "truncated: header announces " + std::to_string(payload) + " data bytes, file has " +
                   std::to_string(bytes.size() - header) + " (expected " + what + ")",
               kMnistUrl);
  if (bytes.size() - header > static_cast<size_t>(payload))
    file_error(path,
               "has " + std::to_string(bytes.size() - header - payload) + " bytes after the data (expected " +
                   what + ")",
               kMnistUrl);
  return std::vector<uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
}

}  // namespace

std::unique_ptr<ImageDataset> load_mnist(const MnistOptions& options) {
  if (options.set != "train" && options.set != "t10k")
    throw std::invalid_argument("MNIST set must be 'train' or 't10k', got '" + options.set + "'");
  if (options.pad < 0) throw std::invalid_argument("MNIST pad must be >= 0");
  const std::string images_what =
      "MNIST images, IDX magic 0x00000803, int32 count/rows/cols, then pixel bytes";
  const std::string labels_what = "MNIST labels, IDX magic 0x00000801, int32 count, then label bytes 0..9";
  std::string images_path = idx_path(options.root, options.set + "-images-idx3-ubyte", images_what);
  std::string labels_path = idx_path(options.root, options.set + "-labels-idx1-ubyte", labels_what);

  std::vector<int64_t> idims, ldims;
  std::vector<uint8_t> images = read_idx(images_path, kIdxImagesMagic, 3, images_what, idims);
  std::vector<uint8_t> labels = read_idx(labels_path, kIdxLabelsMagic, 1, labels_what, ldims);
  const int64_t n = idims[0], rows = idims[1], cols = idims[2];
  if (ldims[0] != n)
    file_error(labels_path,
               "has " + std::to_string(ldims[0]) + " labels but " + images_path + " has " +
                   std::to_string(n) + " images",
               kMnistUrl);
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] > 9)
      file_error(labels_path,
                 "label " + std::to_string(i) + " is " + std::to_string(labels[i]) + " (expected 0..9)",
                 kMnistUrl);

  // An image side is bounded before any product of sizes is formed: a header of zero images may
  // announce any rows and cols (its data is empty), found by tests/fuzz/fuzz_mnist.cpp.
  constexpr int64_t kMaxSide = 65536;
  if (rows < 1 || cols < 1 || rows > kMaxSide || cols > kMaxSide)
    file_error(images_path,
               "images of " + std::to_string(rows) + " x " + std::to_string(cols) + " pixels (expected 1.." +
                   std::to_string(kMaxSide) + " each; MNIST's are 28 x 28)",
               kMnistUrl);
  const int64_t p = options.pad;
  if (p > kMaxSide) throw std::invalid_argument("MNIST pad must be <= " + std::to_string(kMaxSide));
  ImageShape shape{1, rows + 2 * p, cols + 2 * p};
  if (p > 0) {
    std::vector<uint8_t> padded(static_cast<size_t>(n * shape.numel()), 0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t y = 0; y < rows; ++y)
        for (int64_t x = 0; x < cols; ++x)
          padded[static_cast<size_t>(i * shape.numel() + (y + p) * shape.width + x + p)] =
              images[static_cast<size_t>((i * rows + y) * cols + x)];
    images = std::move(padded);
  }
  return std::make_unique<InMemoryImages>("MNIST " + options.set, shape, 10, std::move(images),
                                          std::move(labels), options.normalize, options.augment);
}

}  // namespace emu::data
