// The outputs of `emutrain cost` (docs/cost.md): the terminal table, JSON and
// CSV, the figures a sweep adds to results.csv, and the per-format MAC table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "train/cost_model.h"
#include "train/cost_step.h"

namespace emu::train {

struct CostReportHeader {
  std::string recipe;  // the recipe file
  std::string model;   // model type and parameters
  int64_t batch = 0;
};

std::string cost_table(const CostReportHeader& h, const StepCounts& c, const CostModel& m);
std::string cost_json(const CostReportHeader& h, const StepCounts& c, const CostModel& m);
// One row per count: pass (step or inference), layer, phase, category, a, b, c, mode, count, pj.
std::string cost_csv(const StepCounts& c, const CostModel& m);

// The cost columns of a sweep's results.csv (docs/studies.md), in this order.
struct CostColumns {
  int64_t step_macs = 0;      // multiply-accumulates of one training step
  double step_pj = 0;         // energy of one training step (arithmetic and memory)
  double step_mac_pj = 0;     // ... of its multiply-accumulates
  double step_memory_pj = 0;  // ... of its memory traffic
  double inference_pj = 0;    // energy of one inference pass of the same batch
  double area_um2 = 0;        // one unit of each kind the step uses
  double mac_area_um2 = 0;    // ... of the kinds its multiply-accumulates use
};
const std::vector<std::string>& cost_column_names();
CostColumns cost_columns(const StepCounts& c, const CostModel& m);
// The column values as results.csv writes them ("" when the cost is unknown).
std::vector<std::string> cost_column_values(const std::optional<CostColumns>& c);

// One multiply-accumulate with both operands and the accumulator in each format:
// multiplier, adder and MAC energy in pJ, and the MAC's ratio to fp32's.
std::string mac_energy_table(const CostModel& m, const std::vector<std::string>& formats);

}  // namespace emu::train
