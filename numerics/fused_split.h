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

// Adds the partial products of a * b under `s` to `run` (a, b nonzero: the
// caller skips zero terms). Each partial product is exact in binary64 (at most
// 2 x 11 significant bits, the 2^-12 scaling included). An unresolved Auto adds
// NaN, as split_mac_term returns NaN for it.
EMU_HD void fused_split_products(SplitMul s, ExactRun& run, float a, float b) {
  if (s == SplitMul::Auto) {
    run.add(quiet_nan());
    return;
  }
  if (s == SplitMul::Int16) {
    run.add(static_cast<double>(split_int16_product(a, b)));
    return;
  }
  const SplitParts x = split_parts(s, a), y = split_parts(s, b);
  auto add = [&](float u, float v, double scale) {
    run.add(static_cast<double>(u) * static_cast<double>(v) * scale);
  };
  switch (s) {
    case SplitMul::Fp32B:
      add(x.hi, y.hi, 1.0);
      add(x.hi, y.mi, 1.0);
      add(x.mi, y.hi, 1.0);
      add(x.hi, y.lo, 1.0);
      add(x.mi, y.mi, 1.0);
      add(x.lo, y.hi, 1.0);
      break;
    case SplitMul::Fp32F:
      add(x.hi, y.hi, 1.0);
      add(x.hi, y.lo, 1.0 / 4096.0);
      add(x.lo, y.hi, 1.0 / 4096.0);
      break;
    case SplitMul::Fp32T:
      add(x.hi, y.hi, 1.0);
      add(x.hi, y.lo, 1.0);
      add(x.lo, y.hi, 1.0);
      break;
    default:
      break;
  }
}

}  // namespace emu
