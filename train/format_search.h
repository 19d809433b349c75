// The accuracy-preserving recursive binary search over floating-point widths
// behind `emutrain search` (docs/studies.md), after GoldenEye's data-type
// design-space exploration (Mahmoud et al., DSN 2022): shrink the bit widths
// while the metric stays within `threshold` of the fp32 baseline.
//
// pass(e, m) := metric(e, m) >= baseline - threshold   (a diverged run fails)
//
// From the start format (E, M), which must pass, each round
//   1. binary-searches the smallest passing mantissa width in [min_man, M]
//      with the exponent fixed at E:  lo = min_man, hi = M (passes);
//      while lo < hi: mid = floor((lo + hi) / 2); pass(E, mid) ? hi = mid : lo = mid + 1;  M = hi
//   2. then the smallest passing exponent width in [min_exp, E] with the
//      mantissa fixed at the new M, the same way;  E = hi
// and the rounds repeat from the new (E, M) until one changes neither width
// (a narrower exponent can change which mantissa widths pass). Every (e, m) is
// evaluated at most once (later asks are answered from the cache). The search
// assumes pass() is monotone along each line it bisects; where it is not, the
// result is a passing format, not necessarily the smallest.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace emu::train {

struct FormatSearchOptions {
  int start_exp = 8, start_man = 23;  // the widest format tried (e8m23 = fp32)
  int min_exp = 2, min_man = 1;       // the narrowest widths the search may reach
  double threshold = 1.0;  // metric points (e.g. accuracy percent) below the baseline that still pass
};

struct SearchVisit {
  int exp = 0, man = 0;
  double metric = 0;  // NaN when the run diverged or failed
  bool pass = false;
  bool cached = false;  // asked again: answered from an earlier evaluation
  std::string phase;    // "start", "round 1 mantissa (e8)", "round 1 exponent (m3)", ...
};

struct FormatSearchResult {
  double baseline = 0;
  std::vector<SearchVisit> visits;  // every ask, in order (cached ones marked)
  bool found = false;               // false: the start format itself fails
  int exp = 0, man = 0;             // where the search ended
  std::vector<std::pair<int, int>>
      smallest;  // the passing evaluated formats with the fewest bits (1 + e + m)
};

// Runs the search; `metric(e, m)` trains (or looks up) format eEmM and gives
// its metric, NaN for a diverged/failed run; `on_visit` sees every visit as it
// happens.
FormatSearchResult search_formats(const FormatSearchOptions& options, double baseline,
                                  const std::function<double(int exp, int man)>& metric,
                                  const std::function<void(const SearchVisit&)>& on_visit = {});

// The cheapest format within `threshold` of the baseline (`emutrain search
// --minimize energy`, docs/studies.md): the energies are known before any
// training (a counted step, docs/cost.md), so the candidates are trained in
// ascending energy until one passes: that one is the cheapest passing
// candidate, with no assumption on how accuracy varies. To train fewer, a
// candidate is skipped when a failed candidate of the same family is at least as
// wide in both widths (the monotonicity the width search assumes too).
struct EnergyCandidate {
  std::string format;
  std::string family;          // candidates are compared for skipping within one family
  int width1 = 0, width2 = 0;  // eXmY: exponent and mantissa widths; fixed<w>_<f>: w and f
  double energy = 0;           // pJ of one training step
};
struct EnergyVisit {
  size_t candidate = 0;
  double metric = 0;  // NaN: diverged or failed
  bool pass = false;
  bool skipped = false;  // not trained: a failed candidate dominates it
};
struct EnergySearchResult {
  std::vector<EnergyVisit> visits;  // in ascending energy, up to the first pass
  bool found = false;
  size_t best = 0;  // the cheapest passing candidate
};
// `metric(i)` trains candidate i and gives its metric (NaN when it diverged or failed).
EnergySearchResult search_min_energy(const std::vector<EnergyCandidate>& candidates, double baseline,
                                     double threshold, const std::function<double(size_t)>& metric,
                                     const std::function<void(const EnergyVisit&)>& on_visit = {});

}  // namespace emu::train
