// libFuzzer target: sweep files (train/sweep.h). parse_sweep either returns a
// spec or throws SweepError with a one-line message naming the file; a spec of
// at most kMaxRuns runs is expanded into its points and runs, which either
// works (as many points as the product of the axis groups' sizes, unique ids)
// or throws SweepError (a template naming an unknown variable).
#include <set>
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "train/sweep.h"

namespace {
constexpr size_t kMaxRuns = 4096;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  using namespace emu::train;
  const std::string path = scratch_dir() + "/sweep.yaml";  // not written: parse_sweep takes the text
  SweepSpec spec;
  try {
    spec = parse_sweep(std::string(reinterpret_cast<const char*>(data), size), path);
  } catch (const SweepError& e) {
    require_one_line(e, "sweep " + path);
    return 0;
  }
  if (spec.seeds.empty()) fail("sweep", "no seeds");
  size_t points = 1;
  for (size_t a = 0; a < spec.axes.size(); ++a) {
    if (spec.axes[a].values.empty()) fail("sweep", "an axis without values");
    if (a > 0 && spec.axes[a].group == spec.axes[a - 1].group) {
      if (spec.axes[a].values.size() != spec.axes[a - 1].values.size())
        fail("sweep", "a zip of unequal axes");
      continue;
    }
    points *= spec.axes[a].values.size();
    if (points > kMaxRuns) return 0;
  }
  if (points * spec.seeds.size() > kMaxRuns) return 0;
  try {
    std::vector<SweepPoint> p = expand_sweep(spec);
    if (p.size() != points) fail("sweep points", std::to_string(p.size()) + " != " + std::to_string(points));
    std::vector<SweepRun> runs = sweep_runs(spec, p);
    std::set<std::string> ids;
    for (const SweepRun& r : runs) ids.insert(r.id);
    if (ids.size() != runs.size()) fail("sweep run ids", "not unique");
  } catch (const SweepError& e) {
    require_one_line(e);
  }
  return 0;
}
