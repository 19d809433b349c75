// Test sizes in a sanitizer build (docs/sanitize.md). ASan + UBSan make the
// heaviest tests 5-10x slower; those take a smaller size there (fewer random
// cases, a smaller model), never skip what they check.
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

}  // namespace emu::test
