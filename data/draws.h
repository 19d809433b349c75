// The random choices of the data pipeline (shuffling, augmentation, splits),
// each a pure function of (seed, epoch, example index) through Philox
// (docs/contract.md section 6), so they do not depend on worker threads, batch
// composition or call order, and a GPU-side pipeline could draw the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "core/draw_key.h"
#include "numerics/philox.h"

namespace emu::data {

// What a draw is for; each purpose and epoch gets its own Philox stream.
enum class DataDraw : uint64_t {
  Shuffle = 1,  // the loader's example order of an epoch
  Augment = 2,  // random crop / flip of one example
  Split = 3,    // train/val/test splits (epoch 0)
};

// The stream of `what` in `epoch`: a hash, like layer_draw_key's, so data
// streams do not line up with layer streams.
inline uint64_t data_stream(DataDraw what, int64_t epoch) {
  return mix64(path_hash("data") ^ mix64(static_cast<uint64_t>(what) +
                                         0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(epoch) + 1)));
}

// An integer in [0, n) from 32 random bits: floor(word * n / 2^32). The bias is
// below n / 2^32, and the formula is integer-exact on any device.
inline int64_t uniform_below(uint32_t word, int64_t n) {
  return static_cast<int64_t>((static_cast<uint64_t>(word) * static_cast<uint64_t>(n)) >> 32);
}

// A permutation of 0..n-1: the indices sorted by the 64-bit key
// (draw(2i) << 32 | draw(2i+1)), draw(j) = philox_draw(seed, stream, j), ties by
// index. Sorting by keys (rather than Fisher-Yates) makes the position of an
// example a function of keys computed independently per index.
std::vector<int64_t> philox_permutation(int64_t n, uint64_t seed, uint64_t stream);

}  // namespace emu::data
