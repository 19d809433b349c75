#include "train/format_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

namespace emu::train {

FormatSearchResult search_formats(const FormatSearchOptions& o, double baseline,
                                  const std::function<double(int, int)>& metric,
                                  const std::function<void(const SearchVisit&)>& on_visit) {
  if (o.min_exp > o.start_exp || o.min_man > o.start_man)
    throw std::invalid_argument(
        fmt::format("search: the start e{}m{} is narrower than the minimum widths e{}m{}", o.start_exp,
                    o.start_man, o.min_exp, o.min_man));
  FormatSearchResult res;
  res.baseline = baseline;
  std::map<std::pair<int, int>, double> cache;
  auto pass_of = [&](double v) { return !std::isnan(v) && v >= baseline - o.threshold; };
  auto pass = [&](int e, int m, const std::string& phase) {
    SearchVisit v;
    v.exp = e;
    v.man = m;
    v.phase = phase;
    auto it = cache.find({e, m});
    v.cached = it != cache.end();
    v.metric = v.cached ? it->second : metric(e, m);
    if (!v.cached) cache[{e, m}] = v.metric;
    v.pass = pass_of(v.metric);
    res.visits.push_back(v);
    if (on_visit) on_visit(v);
    return v.pass;
  };
  // The smallest passing value in [lo, hi] (hi passes) of `passes`.
  auto bisect = [](int lo, int hi, const std::function<bool(int)>& passes) {
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (passes(mid))
        hi = mid;
      else
        lo = mid + 1;
    }
    return hi;
  };

  int e = o.start_exp, m = o.start_man;
  res.found = pass(e, m, "start");
  if (res.found) {
    for (int round = 1;; ++round) {
      const std::string mphase = fmt::format("round {} mantissa (e{})", round, e);
      const int m2 = bisect(o.min_man, m, [&](int x) { return pass(e, x, mphase); });
      const std::string ephase = fmt::format("round {} exponent (m{})", round, m2);
      const int e2 = bisect(o.min_exp, e, [&](int x) { return pass(x, m2, ephase); });
      const bool changed = e2 != e || m2 != m;
      e = e2;
      m = m2;
      if (!changed) break;
    }
    res.exp = e;
    res.man = m;
  }
  int best_bits = 1 << 30;
  for (const auto& [em, v] : cache)
    if (pass_of(v)) best_bits = std::min(best_bits, 1 + em.first + em.second);
  for (const auto& [em, v] : cache)
    if (pass_of(v) && 1 + em.first + em.second == best_bits) res.smallest.push_back(em);
  return res;
}

EnergySearchResult search_min_energy(const std::vector<EnergyCandidate>& c, double baseline, double threshold,
                                     const std::function<double(size_t)>& metric,
                                     const std::function<void(const EnergyVisit&)>& on_visit) {
  std::vector<size_t> order(c.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return c[a].energy < c[b].energy; });
  EnergySearchResult res;
  std::vector<size_t> failed;
  for (size_t i : order) {
    EnergyVisit v;
    v.candidate = i;
    for (size_t f : failed)
      if (c[f].family == c[i].family && c[i].width1 <= c[f].width1 && c[i].width2 <= c[f].width2)
        v.skipped = true;
    if (v.skipped) {
      v.metric = NAN;
    } else {
      v.metric = metric(i);
      v.pass = !std::isnan(v.metric) && v.metric >= baseline - threshold;
      if (!v.pass) failed.push_back(i);
    }
    res.visits.push_back(v);
    if (on_visit) on_visit(v);
    if (v.pass) {
      res.found = true;
      res.best = i;
      break;
    }
  }
  return res;
}

}  // namespace emu::train
