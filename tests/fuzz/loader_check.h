// The check every loader target makes (docs/sanitize.md): the loader, given
// files written from the fuzz input, either returns a dataset, whose first and
// last examples can then be read as a batch, or throws std::runtime_error whose
// message is one line naming the file (it starts with the scratch folder). Any
// other exception escapes and is a finding. Its allocations stay within
// require_alloc_bound of the bytes it was given, inflated as zlib reads them.
#pragma once

#include <stdexcept>
#include <string_view>
#include <vector>

#include "data/dataset.h"
#include "tests/fuzz/fuzz_support.h"

namespace emu::fuzz {

// Reads examples 0 and size()-1 (both ends of every buffer the loader filled).
inline void read_both_ends(const data::Dataset& d) {
  const int64_t n = d.size();
  if (n < 0) fail("dataset size", "negative");
  if (n == 0) return;
  data::Batch b = d.get({0, n - 1}, 0, 0);
  if (b.size < 0) fail("batch size", "negative");
}

// Runs `load` (which writes nothing: its files are in place) under the checks.
template <class Load>
void check_loader(std::string_view what, size_t inflated_bytes, Load&& load) {
  AllocMeter meter;
  meter.start();
  try {
    load();
  } catch (const std::runtime_error& e) {
    require_one_line(e, scratch_dir());
  }
  require_alloc_bound(meter, inflated_bytes, what);
}

// The inflated size of several files together.
inline size_t inflated_total(const std::vector<std::string_view>& files) {
  size_t total = 0;
  for (std::string_view f : files) total += inflated_size(f, size_t{1} << 30);
  return total;
}

}  // namespace emu::fuzz
