// The safetensors file format (https://github.com/huggingface/safetensors):
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   a JSON object: for every tensor "name": {"dtype": "F32",
//             "shape": [d0, ...], "data_offsets": [begin, end]} (offsets into
//             the data that follows, end exclusive), and optionally
//             "__metadata__": {string: string}; padded with spaces to a
//             multiple of 8 so the data is aligned
//   the data  every tensor's row-major little-endian bytes, back to back,
//             covering the data region without holes or overlaps
// emutrain writes F32 only (the element type of every tensor), in name order.
#pragma once

#include <map>
#include <stdexcept>
#include <string>

#include "core/tensor.h"
#include "numerics/printable.h"

namespace emu::train {

// A file that is not a valid safetensors file (or not one emutrain can read);
// what() is one line: "corrupt checkpoint <file>: <problem>".
class CheckpointError : public OneLineError {
 public:
  using OneLineError::OneLineError;
};

struct TensorFile {
  std::map<std::string, Tensor> tensors;  // any device when written; read back as CPU tensors
  std::map<std::string, std::string> metadata;
};

// Writes `file` atomically (train/atomic_file.h: "<path>.tmp", fsync, rename
// over `path`, fsync of the directory), so a reader (or a run killed
// mid-write) sees either the old file or the complete new one. Tensors on a
// device are downloaded; a write error is a CheckpointError naming the file.
void write_safetensors(const std::string& path, const TensorFile& file);

// Reads and validates every structural rule above; throws CheckpointError. The
// tensors are CPU tensors: loading copies them into a model on any device.
TensorFile read_safetensors(const std::string& path);

// Header limit, as the reference implementation (100 MB).
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

}  // namespace emu::train
