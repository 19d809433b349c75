#include "train/sweep_cost.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "train/atomic_file.h"
#include "train/cost_step.h"
#include "train/recipe.h"

namespace emu::train {

namespace fs = std::filesystem;

namespace {

// The cache holds the counts (every entry of cost_csv without its prices) and is
// re-priced on every read, so a changed cost model needs no recount.
struct CachedCounts {
  StepCounts counts;
  bool ok = false;
};

std::string cache_text(const StepCounts& c) {
  std::string s = "pass,layer,phase,category,a,b,c,mode,count\n";
  for (const auto& [pass, counts] : {std::pair<const char*, const CostCounts*>{"step", &c.step},
                                     std::pair<const char*, const CostCounts*>{"inference", &c.inference}})
    for (const auto& [k, n] : counts->entries()) {
      // Layer names and format names hold no comma or quote (module paths, format specs).
      s += fmt::format("{},{},{},{},{},{},{},{},{}\n", pass, k.layer, static_cast<int>(k.phase),
                       static_cast<int>(k.category), k.a, k.b, k.c, k.mode, n);
    }
  return s;
}

CachedCounts read_cache(const std::string& path) {
  CachedCounts r;
  std::ifstream in(path);
  if (!in) return r;
  std::string line;
  if (!std::getline(in, line) || line != "pass,layer,phase,category,a,b,c,mode,count") return r;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    if (!line.empty() && line.back() == ',') f.push_back("");
    if (f.size() != 9) return r;
    CountKey k{
        f[1], static_cast<Phase>(std::stoi(f[2])), static_cast<Category>(std::stoi(f[3])), f[4], f[5], f[6],
        f[7]};
    (f[0] == "step" ? r.counts.step : r.counts.inference).add(k, std::stoll(f[8]));
  }
  r.ok = true;
  return r;
}

}  // namespace

std::vector<std::optional<CostColumns>> sweep_point_costs(const SweepSpec& spec,
                                                          const std::vector<SweepPoint>& points,
                                                          const std::vector<SweepRun>& runs,
                                                          const std::string& out_dir,
                                                          const std::string& cost_model, std::ostream& log) {
  const CostModel model = cost_model.empty() ? default_cost_model() : load_cost_model(cost_model);
  std::vector<std::optional<CostColumns>> costs(points.size());
  const fs::path dir = fs::path(out_dir) / "cost";
  fs::create_directories(dir);
  for (size_t p = 0; p < points.size(); ++p) {
    const SweepRun* first = nullptr;
    for (const SweepRun& r : runs)
      if (r.point == p) {
        first = &r;
        break;
      }
    if (!first) continue;
    const std::string cache = (dir / (points[p].id + ".csv")).string();
    CachedCounts c = read_cache(cache);
    if (!c.ok) {
      try {
        c.counts = count_recipe(load_recipe(spec.recipe, first->sets));
        write_file_atomic(cache, cache_text(c.counts));
        c.ok = true;
      } catch (const std::exception& e) {
        log << fmt::format("sweep {}: point {}: no cost columns: {}\n", spec.name, points[p].id, e.what());
        continue;
      }
    }
    costs[p] = cost_columns(c.counts, model);
  }
  return costs;
}

}  // namespace emu::train
