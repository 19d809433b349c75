// A split scheme's partial products of one term, into a fused run
// (docs/contract.md sections 4.8 and 5.6), host and device.
//
// A fused run sums every partial product exactly, so only the set of partial
// products matters here, not the order in which split_mac_term adds them: the
// same parts (split_parts, split_int16_product in numerics/split_mul.h) and the
// same skipped products (Mi*Lo, Lo*Mi, Lo*Lo; fp32f's and fp32t's Lo*Lo).
#pragma once

#include "numerics/exact_run.h"
#include "numerics/split_mul.h"

namespace emu {

// Adds the partial products of a * b under `s` (split_partial_products) to
// `run` (a, b nonzero: the caller skips zero terms). An unresolved Auto adds
// NaN, as split_mac_term returns NaN for it.
EMU_HD void fused_split_products(SplitMul s, ExactRun& run, float a, float b) {
  if (s == SplitMul::Auto) {
    run.add(quiet_nan());
    return;
  }
  split_partial_products(s, a, b, [&](double p) { run.add(p); });
}

}  // namespace emu
