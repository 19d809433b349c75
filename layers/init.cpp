#include "layers/init.h"

#include "core/draw_key.h"
#include "numerics/philox.h"

namespace emu {

void init_uniform(const Module& m, Tensor& t, float bound, uint64_t salt) {
  DrawKey key = layer_draw_key(m.context().seed, m.path(), DrawSite::Init, salt);
  std::vector<float> values(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < values.size(); ++i) {
    // 24 random bits -> u in [0, 1) exactly; 2u - 1 in [-1, 1) exactly.
    float u = static_cast<float>(philox_draw(key.seed, key.stream, i) >> 8) * 0x1p-24f;
    values[i] = (2.0f * u - 1.0f) * bound;
  }
  t.copy_from(Tensor::from_vector(t.shape(), values));
}

}  // namespace emu
