// The ranking of N:M masks (core/backend_ops_sparsity.h, docs/contract.md section 5.2),
// written once for the CPU backend (backends/cpu/sparsity_ops.cpp) and the CUDA
// kernels (backends/cuda/ops/sparsity.cu), so both keep the same elements.
//
// A score becomes a 64-bit key whose unsigned order is the score order, and a
// group member is kept when fewer than N members outrank it. Everything here is
// an integer operation on bit patterns: no float compare (whose treatment of
// subnormals a flush-to-zero mode could change) and nothing that rounds.
#pragma once

#include <cstdint>

#include "numerics/hd.h"
#include "numerics/philox.h"

namespace emu {

// The largest group M (parse_sparsity_ratio allows m <= 256): the CPU keeps a
// group's keys in arrays of this size.
constexpr int kNmMaxGroup = 256;

// A binary32 score as a key that orders like the float: -0 == +0, and every
// NaN (any sign or payload) equal and above +Inf, so NaN weights are kept.
EMU_HD uint64_t nm_float_key(float v) {
  uint32_t u = float_bits(v);
  const uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return uint64_t{1} << 32;  // NaN: above every number (keys of numbers are < 2^32)
  if (mag == 0) u = 0;                              // -0 -> +0
  // Negative floats order in reverse of their bits, so flip them all; positive
  // ones move above every negative by setting the top bit.
  return (u & 0x80000000u) ? static_cast<uint32_t>(~u) : (u | 0x80000000u);
}

// Magnitude scores: |v| (the sign bit cleared: -0 is +0, a NaN stays a NaN).
EMU_HD uint64_t nm_magnitude_key(float v) { return nm_float_key(bits_float(float_bits(v) & 0x7fffffffu)); }

// Random scores: the 32-bit Philox draw of the element's flat index.
EMU_HD uint64_t nm_random_key(uint64_t seed, uint64_t stream, uint64_t flat_index) {
  return philox_draw(seed, stream, flat_index);
}

// Whether member j of a group of `size` members is kept under N = n: fewer than
// n members outrank it, where i outranks j iff key(i) > key(j), or the keys are
// equal and i < j (ties go to the lower index). key(i) returns member i's key.
template <class KeyOf>
EMU_HD bool nm_keeps(KeyOf key, int size, int j, int n) {
  const uint64_t kj = key(j);
  int above = 0;
  for (int i = 0; i < size; ++i) {
    const uint64_t ki = key(i);
    if (ki > kj || (ki == kj && i < j)) ++above;
  }
  return above < n;
}

}  // namespace emu
