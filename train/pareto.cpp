#include "train/pareto.h"

#include <algorithm>
#include <cmath>

namespace emu::train {

std::vector<size_t> pareto_front(const std::vector<ParetoPoint>& points) {
  std::vector<size_t> order;
  for (size_t i = 0; i < points.size(); ++i)
    if (std::isfinite(points[i].cost) && std::isfinite(points[i].quality)) order.push_back(i);
  // By cost, and at equal cost the better first, so it dominates the others of that cost.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (points[a].cost != points[b].cost) return points[a].cost < points[b].cost;
    return points[a].quality > points[b].quality;
  });
  std::vector<size_t> front;
  for (size_t i : order)
    if (front.empty() || points[i].quality > points[front.back()].quality) front.push_back(i);
  return front;
}

}  // namespace emu::train
