#include "core/sparsity_spec.h"

#include <fmt/format.h>

#include <mutex>
#include <stdexcept>

namespace emu {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::string> names;
  std::vector<SparsityScoreFn> fns;
};

// Function-local, so the built-ins (core/sparsity_scores.cpp) are always linked
// and registered before the first lookup, whatever the static-init order.
Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    for (const NamedSparsityScore& s : builtin_sparsity_scores()) {
      reg->names.emplace_back(s.name);
      reg->fns.push_back(s.fn);
    }
    return reg;
  }();
  return *r;
}

[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& value,
                      const std::string& why) {
  throw std::invalid_argument(fmt::format("{}.{}: '{}' {}", where, key, value, why));
}

bool parse_small_int(const std::string& t, int* out) {
  if (t.empty() || t.size() > 4) return false;
  int v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::string SparsitySpec::describe() const {
  if (!enabled()) return "dense";
  const char* target = on == SparsityTarget::Weights ? "weights"
                       : on == SparsityTarget::Grads ? "grads"
                                                     : "both";
  const std::string score_name = score == SparsityScore::Magnitude ? "magnitude"
                                 : score == SparsityScore::Random  ? "random"
                                                                   : sparsity_score_name(user);
  return fmt::format("{}:{} {} {}", n, m, target, score_name);
}

void parse_sparsity_ratio(const std::string& where, const std::string& value, SparsitySpec& s) {
  if (value == "none" || value == "dense") {
    s.n = s.m = 0;
    return;
  }
  const size_t colon = value.find(':');
  int n = 0, m = 0;
  if (colon == std::string::npos || !parse_small_int(value.substr(0, colon), &n) ||
      !parse_small_int(value.substr(colon + 1), &m) || n < 1 || m < 1 || m > 256)
    bad(where, "sparsity", value, "is not N:M with 1 <= N, 1 <= M <= 256 (e.g. 2:4), or none");
  s.n = n;
  s.m = m;
}

void parse_sparsity_on(const std::string& where, const std::string& value, SparsitySpec& s) {
  if (value == "weights")
    s.on = SparsityTarget::Weights;
  else if (value == "grads")
    s.on = SparsityTarget::Grads;
  else if (value == "both")
    s.on = SparsityTarget::Both;
  else
    bad(where, "sparsity_on", value, "is not a target; allowed: weights, grads, both");
}

void parse_sparsity_score(const std::string& where, const std::string& value, SparsitySpec& s) {
  if (value == "magnitude") {
    s.score = SparsityScore::Magnitude;
  } else if (value == "random") {
    s.score = SparsityScore::Random;
  } else {
    const int idx = find_sparsity_score(value);
    if (idx < 0) {
      std::string allowed = "magnitude, random";
      for (const std::string& n : sparsity_score_names()) allowed += ", " + n;
      bad(where, "sparsity_score", value, "is not a score; allowed: " + allowed);
    }
    s.score = SparsityScore::User;
    s.user = idx;
  }
}

int register_sparsity_score(const std::string& name, SparsityScoreFn fn) {
  if (name.empty() || name == "magnitude" || name == "random" || !fn)
    throw std::invalid_argument(fmt::format("register_sparsity_score: bad name '{}' or null function", name));
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.names.size(); ++i) {
    if (r.names[i] == name) {
      r.fns[i] = fn;
      return static_cast<int>(i);
    }
  }
  r.names.push_back(name);
  r.fns.push_back(fn);
  return static_cast<int>(r.names.size() - 1);
}

int find_sparsity_score(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.names.size(); ++i)
    if (r.names[i] == name) return static_cast<int>(i);
  return -1;
}

SparsityScoreFn sparsity_score_fn(int index) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (index < 0 || static_cast<size_t>(index) >= r.fns.size())
    throw std::out_of_range(fmt::format("no sparsity score function #{}", index));
  return r.fns[static_cast<size_t>(index)];
}

const std::string& sparsity_score_name(int index) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (index < 0 || static_cast<size_t>(index) >= r.names.size())
    throw std::out_of_range(fmt::format("no sparsity score function #{}", index));
  return r.names[static_cast<size_t>(index)];
}

std::vector<std::string> sparsity_score_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.names;
}

}  // namespace emu
