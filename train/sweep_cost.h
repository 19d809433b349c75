// The cost columns of a sweep (docs/studies.md, docs/cost.md): each point's
// training step and inference pass counted once and priced, cached in
// <out>/cost/<point id>.csv so a restarted sweep does not count again.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "train/cost_report.h"
#include "train/sweep.h"

namespace emu::train {

// One entry per point: the cost of the point's recipe (base recipe with the
// point's --set list of its first run), or nothing when it could not be counted
// (the reason is written to `log`, once per point). `cost_model` "" = the default table.
std::vector<std::optional<CostColumns>> sweep_point_costs(const SweepSpec& spec,
                                                          const std::vector<SweepPoint>& points,
                                                          const std::vector<SweepRun>& runs,
                                                          const std::string& out_dir,
                                                          const std::string& cost_model, std::ostream& log);

}  // namespace emu::train
