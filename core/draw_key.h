// Stream numbers for the random draws of layers: a pure function of the layer's
// path, the op site inside the layer and the training step, computed on the
// host, so the CPU and CUDA backends draw the same bits (docs/contract.md section 6.3).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/backend_types.h"

namespace emu {

// The places inside a layer that draw random bits; each gets its own stream.
enum class DrawSite : uint32_t {
  Forward = 1,     // rounding of the forward reduction / element-wise results
  GradInput = 2,   // rounding of the grad-input reduction
  GradWeight = 3,  // rounding of the grad-weight reduction
  GradBias = 4,
  ReadWeights = 5,  // stochastic reads of weights
  ReadInput = 6,    // stochastic reads of activations
  ReadGrad = 7,     // stochastic reads of incoming gradients
  Dropout = 8,
  Init = 9,       // parameter initialisation
  Update = 10,    // optimizer arithmetic
  ReadBias = 11,  // stochastic reads of biases (not correlated with the weights')
};

inline uint64_t mix64(uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline uint64_t path_hash(std::string_view path) {  // FNV-1a, 64 bit
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : path) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

inline DrawKey layer_draw_key(uint64_t seed, std::string_view path, DrawSite site, uint64_t step) {
  uint64_t s =
      mix64(path_hash(path) ^ mix64(static_cast<uint64_t>(site) + 0x9e3779b97f4a7c15ull * (step + 1)));
  return DrawKey{seed, s};
}

}  // namespace emu
