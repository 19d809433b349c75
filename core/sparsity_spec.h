// What an N:M sparsity policy asks for (docs/contract.md section 5.2; docs/sparsity.md):
// keep N of every M consecutive elements along a row of the reduction, scored
// by magnitude, a Philox draw or a user function, on the weights, the incoming
// gradients or both. Kept in LayerNumerics, so it is chosen per module by the
// policy keys `sparsity`, `sparsity_on` and `sparsity_score`.
//
// This header holds only the plain description and the registry of user score
// functions (no tensors): core/numerics_policy.h includes it. The tensor side
// is core/sparsity.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numerics/read_layout.h"

namespace emu {

enum class SparsityTarget : uint8_t { Weights = 1, Grads = 2, Both = 3 };
enum class SparsityScore : uint8_t { Magnitude, Random, User };

struct SparsitySpec {
  int n = 0, m = 0;  // keep n of every m; m = 0: dense (no mask)
  SparsityTarget on = SparsityTarget::Weights;
  SparsityScore score = SparsityScore::Magnitude;
  int user = -1;  // index in the user score registry when score == User

  bool enabled() const { return m > 0 && n < m; }  // n >= m keeps everything: no mask
  bool on_weights() const { return enabled() && (static_cast<int>(on) & 1); }
  bool on_grads() const { return enabled() && (static_cast<int>(on) & 2); }
  std::string describe() const;  // "2:4 weights magnitude", "dense"
};

// Parsers of the policy values; each throws std::invalid_argument naming `where.key`,
// the value and what is allowed.
//   "2:4" (1 <= n, 1 <= m <= 256), or "none"/"dense"
void parse_sparsity_ratio(const std::string& where, const std::string& value, SparsitySpec& s);
//   "weights" | "grads" | "both"
void parse_sparsity_on(const std::string& where, const std::string& value, SparsitySpec& s);
//   "magnitude" | "random" | a registered user function name
void parse_sparsity_score(const std::string& where, const std::string& value, SparsitySpec& s);

// A user score function: values (count elements of the tensor being read, the
// dense master copy, flat row-major) -> scores (count). In each group the N
// highest scores are kept, ties to the lower index; a NaN score counts as
// higher than every number (docs/sparsity.md). `layout` says how the elements
// form the rows of the reduction, for functions that look at a whole row.
// Scores are computed on the host, then handed to the backend's nm_mask op.
using SparsityScoreFn = void (*)(const float* values, float* scores, int64_t count, const ReadLayout& layout);

// The registry of user score functions. Built-ins are listed in
// core/sparsity_scores.cpp (add yours there, docs/sparsity.md); tests and
// programs may also register at run time. Returns the function's index;
// registering a name again replaces its function.
int register_sparsity_score(const std::string& name, SparsityScoreFn fn);
int find_sparsity_score(const std::string& name);  // -1 when absent
SparsityScoreFn sparsity_score_fn(int index);      // throws std::out_of_range
const std::string& sparsity_score_name(int index);
std::vector<std::string> sparsity_score_names();

// The compiled-in user functions (core/sparsity_scores.cpp), registered on first use of the registry.
struct NamedSparsityScore {
  const char* name;
  SparsityScoreFn fn;
};
const std::vector<NamedSparsityScore>& builtin_sparsity_scores();

}  // namespace emu
