// Parameter initialisation from Philox draws keyed by the layer's path, so a
// model initialises to the same bits on any backend and thread count.
#pragma once

#include "core/module.h"

namespace emu {

// t (any shape) <- uniform(-bound, bound), element i from draw i of the key of
// `m`'s Init site, salted by `salt` (one per parameter).
void init_uniform(const Module& m, Tensor& t, float bound, uint64_t salt);

}  // namespace emu
