// Compiled-in user score functions for N:M masks (`sparsity_score: <name>`).
// To add one: write a SparsityScoreFn below and list it in
// builtin_sparsity_scores() (docs/sparsity.md). Scores are plain host floats
// that only order the elements of a group; they never reach an emulated value.
#include "core/sparsity_spec.h"

namespace emu {
namespace {

// -|x|: keeps the N smallest magnitudes of each group, the opposite of
// `magnitude` (an ablation baseline, and the example for new functions).
void inverse_magnitude(const float* values, float* scores, int64_t count, const ReadLayout&) {
  for (int64_t i = 0; i < count; ++i) scores[i] = values[i] < 0 ? values[i] : -values[i];
}

// |x| divided by the largest |x| of its row: the same order inside a group as
// `magnitude` (groups never cross rows); shows a function that reads a whole row.
void row_relative_magnitude(const float* values, float* scores, int64_t count, const ReadLayout& l) {
  for (int64_t r = 0; r < l.rows(); ++r) {
    float mx = 0;
    for (int64_t k = 0; k < l.len; ++k) {
      const float a = values[l.index(r, k)] < 0 ? -values[l.index(r, k)] : values[l.index(r, k)];
      if (a > mx) mx = a;
    }
    for (int64_t k = 0; k < l.len; ++k) {
      const int64_t i = l.index(r, k);
      const float a = values[i] < 0 ? -values[i] : values[i];
      scores[i] = mx > 0 ? a / mx : a;
    }
  }
  (void)count;
}

}  // namespace

const std::vector<NamedSparsityScore>& builtin_sparsity_scores() {
  static const std::vector<NamedSparsityScore> s = {
      {"inverse_magnitude", inverse_magnitude},
      {"row_relative_magnitude", row_relative_magnitude},
  };
  return s;
}

}  // namespace emu
