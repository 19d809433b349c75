// The recursive binary search of `emutrain search` on accuracy oracles (a
// function of the widths instead of training): the visiting order equals the
// sequence derived by hand from the definition in train/format_search.h.
#include <catch2/catch.hpp>
#include <cmath>
#include <utility>
#include <vector>

#include "train/format_search.h"

using namespace emu::train;
using Visits = std::vector<std::pair<int, int>>;

namespace {

Visits evaluated(const FormatSearchResult& r) {
  Visits v;
  for (const SearchVisit& s : r.visits)
    if (!s.cached) v.push_back({s.exp, s.man});
  return v;
}

}  // namespace

TEST_CASE("search: a narrower exponent lets the mantissa shrink again", "[search]") {
  // Passing formats: e5..e8 with >= 4 mantissa bits, and e5 with >= 2.
  // By hand (lo, hi, mid = floor((lo + hi) / 2)):
  //  start e8m23 passes
  //  round 1 mantissa at e8, [1, 23]: m12 P, m6 P, m3 F, m5 P, m4 P -> m4
  //  round 1 exponent at m4, [2, 8]: e5 P, e3 F, e4 F -> e5
  //  round 2 mantissa at e5, [1, 4]: m2 P, m1 F -> m2
  //  round 2 exponent at m2, [2, 5]: e3 F, e4 F -> e5
  //  round 3 mantissa at e5, [1, 2]: m1 (cached F); exponent at m2: e3, e4 (cached) -> unchanged, stop
  int calls = 0;
  auto metric = [&](int e, int m) {
    ++calls;
    const bool pass = (e >= 5 && m >= 4) || (e == 5 && m >= 2);
    return pass ? 80.0 : 40.0;
  };
  FormatSearchOptions o;
  std::vector<SearchVisit> seen;
  FormatSearchResult r = search_formats(o, 80.5, metric, [&](const SearchVisit& v) { seen.push_back(v); });
  CHECK(evaluated(r) == Visits{{8, 23},
                               {8, 12},
                               {8, 6},
                               {8, 3},
                               {8, 5},
                               {8, 4},
                               {5, 4},
                               {3, 4},
                               {4, 4},
                               {5, 2},
                               {5, 1},
                               {3, 2},
                               {4, 2}});
  CHECK(calls == 13);  // every format evaluated once
  REQUIRE(r.visits.size() == 16);
  CHECK(r.visits[13].cached);  // round 3: e5m1, e3m2, e4m2 again
  CHECK((r.visits[13].exp == 5 && r.visits[13].man == 1 && !r.visits[13].pass));
  CHECK(r.visits[0].phase == "start");
  CHECK(r.visits[1].phase == "round 1 mantissa (e8)");
  CHECK(r.visits[6].phase == "round 1 exponent (m4)");
  CHECK(r.visits[9].phase == "round 2 mantissa (e5)");
  CHECK(r.visits[11].phase == "round 2 exponent (m2)");
  CHECK(seen.size() == r.visits.size());
  CHECK(r.found);
  CHECK(r.exp == 5);
  CHECK(r.man == 2);
  CHECK(r.smallest == Visits{{5, 2}});
  CHECK(r.baseline == 80.5);
}

TEST_CASE("search: threshold, diverged runs and a start that fails", "[search]") {
  // Accuracy = 70 + m (capped at 80) for e >= 4, NaN (diverged) below; baseline 80.
  auto metric = [](int e, int m) { return e >= 4 ? std::min(80.0, 70.0 + m) : NAN; };
  FormatSearchOptions o;
  o.threshold = 2.0;  // passes from 78: m >= 8
  o.start_exp = 6;
  o.start_man = 10;
  FormatSearchResult r = search_formats(o, 80.0, metric);
  // start e6m10 P; round 1 mantissa at e6, [1, 10]: m5 F, m8 P, m7 F -> m8;
  // exponent at m8, [2, 6]: e4 P, e3 F (NaN) -> e4; round 2 mantissa at e4, [1, 8]: m4 F, m6 F, m7 F -> m8;
  // exponent at m8, [2, 4]: e3 (cached F) -> e4; unchanged, stop.
  CHECK(evaluated(r) == Visits{{6, 10}, {6, 5}, {6, 8}, {6, 7}, {4, 8}, {3, 8}, {4, 4}, {4, 6}, {4, 7}});
  REQUIRE(r.visits.size() == 10);
  CHECK(std::isnan(r.visits[5].metric));
  CHECK_FALSE(r.visits[5].pass);
  CHECK(r.visits[9].cached);
  CHECK(r.exp == 4);
  CHECK(r.man == 8);
  CHECK(r.smallest == Visits{{4, 8}});

  o.threshold = 0.5;  // a baseline of 90: the start's 80 fails, so the search stops there
  FormatSearchResult none = search_formats(o, 90.0, metric);
  CHECK_FALSE(none.found);
  CHECK(evaluated(none) == Visits{{6, 10}});
  CHECK(none.smallest.empty());
}

TEST_CASE("search --minimize energy: candidates trained in ascending energy until one passes", "[search]") {
  // Energies and accuracies by hand; baseline 90, threshold 1: pass at >= 89.
  const std::vector<EnergyCandidate> c = {
      {"e5m10", "ieee", 5, 10, 40.0},     // 0: passes, but dearer than 2
      {"e4m3", "ieee", 4, 3, 10.0},       // 1: cheapest, fails
      {"e5m7", "ieee", 5, 7, 30.0},       // 2: passes: the answer
      {"e3m2", "ieee", 3, 2, 20.0},       // 3: narrower than the failed e4m3 in both widths: skipped
      {"fixed8_4", "fixed", 8, 4, 15.0},  // 4: another family: trained, diverges
  };
  const std::vector<double> acc = {89.5, 70.0, 89.0, 95.0 /* never asked */, NAN};
  std::vector<size_t> trained;
  EnergySearchResult r = search_min_energy(c, 90.0, 1.0, [&](size_t i) {
    trained.push_back(i);
    return acc[i];
  });
  CHECK(trained == std::vector<size_t>{1, 4, 2});
  REQUIRE(r.found);
  CHECK(r.best == 2);
  REQUIRE(r.visits.size() == 4);  // e4m3, fixed8_4, e3m2 (skipped), e5m7
  CHECK(r.visits[2].candidate == 3);
  CHECK(r.visits[2].skipped);
  CHECK_FALSE(r.visits[1].pass);  // a diverged run fails
  CHECK(r.visits[3].pass);
  // Nothing passes: every candidate is visited, none found.
  EnergySearchResult none = search_min_energy(c, 99.0, 1.0, [&](size_t i) { return acc[i]; });
  CHECK_FALSE(none.found);
  CHECK(none.visits.size() == c.size());
}
