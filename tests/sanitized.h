// Test sizes in a sanitizer build (docs/sanitize.md). ASan + UBSan make the
// heaviest tests 5-10x slower; those take a smaller size there (fewer random
// cases, every k-th point of an exhaustive sweep, a smaller model), never skip
// what they check: the same code paths and special cases run, on fewer values.
// The normal build runs every size in full.
#pragma once

#include <cstdint>

namespace emu::test {

#ifdef EMUTRAIN_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// n in a normal build; n / divisor (at least 1) in a sanitizer build.
constexpr int64_t sanitized_size(int64_t n, int64_t divisor) {
  return kSanitized ? (n / divisor > 0 ? n / divisor : 1) : n;
}

// 1 in a normal build; `stride` in a sanitizer build, where a sweep over every
// code (or pair of codes) takes every stride-th one. An odd stride lets the low
// bits of the codes vary from one visited code to the next.
constexpr int64_t sanitized_stride(int64_t stride) { return kSanitized ? stride : 1; }

}  // namespace emu::test
