// The named policy set of `emutrain validate` (docs/validate.md): each entry is
// a list of numerics policy keys (core/numerics_policy.h), resolved once into
// what the op calls of a case get (formats, MacPolicy, functions) and the
// pre- and post-steps around them (reads, N:M masks, layer-level rounding).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/numerics_policy.h"
#include "numerics/activations.h"
#include "numerics/recurrent_cells.h"

namespace emu::validate {

// One row of the table: a name, what it stands for, and its policy keys.
struct PolicyEntry {
  const char* name;
  const char* what;
  std::vector<std::pair<const char*, const char*>> keys;
};

// The table, in matrix column order (tools/validate_policies.cpp).
const std::vector<PolicyEntry>& policy_table();

// What an op call gets under a policy.
struct OpNumerics {
  Format f;       // element-wise results (and the `g`, `out`, update formats)
  MacPolicy mac;  // reductions
  MacPolicy sum;  // plain sums (mul exact), as layers' sum_mac: index_sum, channel_sum
  FunctionApprox functions[static_cast<int>(Function::Count)] = {};
  GateFunctions gates;  // sigmoid and tanh of the recurrent ops

  const FunctionApprox& function(Function fn) const { return functions[static_cast<int>(fn)]; }
  // The approximation an activation layer passes (relu: exact, it ignores fn).
  const FunctionApprox& activation(Activation a) const;
};

struct Policy {
  std::string name, what;
  std::string keys;          // "mul=bf16 acc=fp32 out=bf16", for --list
  LayerNumerics numerics;    // the keys resolved
  OpNumerics op;             // what op calls get: fp32 under layer-level emulation
  bool layer_level = false;  // results rounded once to numerics.out() after the op, on each backend
  // Format families the op computes in: the device must support the op for each.
  std::vector<Family> families;
};

// The table resolved (throws if an entry's keys are invalid: a bug of the table).
const std::vector<Policy>& policies();

}  // namespace emu::validate
