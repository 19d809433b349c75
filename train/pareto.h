// The Pareto front of (cost, quality) points: the points no other point beats
// in both, i.e. no point is at most as costly and at least as good with one of
// the two strictly better. `emutrain plot --pareto` marks it (docs/plots.md).
#pragma once

#include <cstddef>
#include <vector>

namespace emu::train {

struct ParetoPoint {
  double cost = 0;     // lower is better (energy, area)
  double quality = 0;  // higher is better (accuracy)
};

// Indices of the front's points, by ascending cost. Points with a NaN are never on it.
std::vector<size_t> pareto_front(const std::vector<ParetoPoint>& points);

}  // namespace emu::train
