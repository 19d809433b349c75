// The energy and area model of `emutrain cost` (docs/cost.md): a YAML table of
// unit costs (the shipped default: Horowitz, ISSCC 2014, 45 nm) and the rules
// that price formats the table does not list.
//
//   CostModel m = default_cost_model();            // or load_cost_model("synth.yaml")
//   mac_cost(m, fp16, fp16, fp32, "exact").pj      // one multiply-accumulate
//   Priced p = price(m, counts);                    // picojoules per category, unit area
#pragma once

#include <map>
#include <string>
#include <vector>

#include "numerics/format.h"
#include "train/cost_counts.h"

namespace emu::train {

struct UnitCost {
  double pj = 0;   // energy of one operation
  double um2 = 0;  // area of one unit
  UnitCost operator+(const UnitCost& o) const { return {pj + o.pj, um2 + o.um2}; }
  UnitCost operator*(double k) const { return {pj * k, um2 * k}; }
};

struct CostModel {
  std::string name, source;
  std::map<int, UnitCost> int_add, int_mul;  // by width in bits
  struct FloatEntry {
    std::string format;  // as written in the table
    int exp_bits = 0, man_bits = 0;
    UnitCost cost;
  };
  std::vector<FloatEntry> float_add, float_mul;
  std::map<std::string, double> memory_pj;  // level -> pJ per 64-bit access
  std::string operands = "sram_32kb";       // the level operand and metadata traffic is charged at
  // Rules (docs/cost.md says which are modelling choices).
  double posit_decode_adds = 1, posit_encode_adds = 1;
  double function_muls = 5, function_adds = 5;
  double approx_mul_factor = 0.5;
  double div_muls = 1, sqrt_muls = 1;
};

// The shipped table as YAML (`emutrain cost --print-model` prints it).
const char* default_cost_model_yaml();
CostModel default_cost_model();
// A user's table; errors are one line naming the file and the key path.
CostModel load_cost_model(const std::string& path);
CostModel parse_cost_model(const std::string& yaml, const std::string& source);

// Unit costs of one operation on formats given by name (format_name / parse_format).
UnitCost add_cost(const CostModel& m, const std::string& format);
UnitCost mul_cost(const CostModel& m, const std::string& a, const std::string& b);
// An approximate multiplier "lut:<model>:<format>": approx_mul_factor of the exact one of that format.
UnitCost approx_mul_cost(const CostModel& m, const std::string& spec);
// A split product (mode "split:<scheme>", docs/contract.md section 5.6): the
// scheme's unit multiplies and its additions into the accumulator.
struct SplitCost {
  int unit_muls = 0;     // products of the unit format per term
  std::string unit;      // the unit's format: bf16, fp16, tf32, int8
  int acc_adds = 0;      // partial products added into the accumulator
  int combine_adds = 0;  // exact int32 additions combining the byte products (int16)
};
// The scheme of a "split:..." mode; throws std::invalid_argument for another mode.
SplitCost split_cost_shape(const std::string& mode);
// One multiply-accumulate: the product (mode "lut:<model>:<format>": the
// approximate multiplier; "split:<scheme>": the scheme's unit multiplies and
// additions, which replace the plain one) and the addition.
UnitCost mac_cost(const CostModel& m, const std::string& a, const std::string& b, const std::string& acc,
                  const std::string& mode);
// A non-linear function evaluation: exact (function_muls products and
// function_adds additions in the format) or pwl:<K> (ceil(log2 K) comparisons to
// find the piece, one product and one addition; a "_slope" lookup only the comparisons).
UnitCost function_cost(const CostModel& m, const std::string& fn, const std::string& mode,
                       const std::string& format);
// An element-wise operation: add, cmp (an addition), mul, div, sqrt (div_muls, sqrt_muls products).
UnitCost op_cost(const CostModel& m, const std::string& kind, const std::string& format);
// pJ per bit moved at the operands' level.
double bit_cost(const CostModel& m);

struct Priced {
  double mac = 0, add = 0, op = 0, function = 0, memory = 0;  // pJ
  double area_um2 = 0;      // one unit of each distinct kind the counts use (no memory, no control)
  double mac_area_um2 = 0;  // ... of the kinds the multiply-accumulates use (multipliers and accumulators)
  double arithmetic() const { return mac + add + op + function; }
  double total() const { return arithmetic() + memory; }
};
// The energy of the counts whose key passes `keep` (all when empty).
Priced price(const CostModel& m, const CostCounts& c, const std::function<bool(const CountKey&)>& keep = {});
// The energy of one count entry.
double entry_pj(const CostModel& m, const CountKey& k, int64_t n);

}  // namespace emu::train
