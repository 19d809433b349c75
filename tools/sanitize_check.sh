#!/usr/bin/env bash
# The sanitizer and fuzzing checks of CI (docs/sanitize.md), after the normal
# build and tests:
#   1. build-asan: every library, tool, test and fuzz target with clang under
#      AddressSanitizer + UndefinedBehaviorSanitizer (CUDA off; the kernels still
#      run through the host executor), then the ctest suite there, including
#      each fuzz target run from its seed corpus (label `fuzz`), less the tests
#      labelled `sanitize_repeat` (the same code and memory as tests that run:
#      docs/sanitize.md says which and why);
#   2. build-tsan: the tests labelled `tsan` (the thread pool, the data loader's
#      workers and the threaded CPU ops and training) under ThreadSanitizer.
# Usage: tools/sanitize_check.sh [asan|tsan]...  (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${EMUTRAIN_JOBS:-2}
clang=(-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14)
stamp() { echo "sanitize_check: $(date +%H:%M:%S) $*"; }

run_asan() {
  stamp "ASan+UBSan: configure and build (build-asan)"
  cmake -S . -B build-asan -G Ninja "${clang[@]}" -DEMUTRAIN_SANITIZE=address,undefined -DEMUTRAIN_FUZZ=ON \
    ${EMUTRAIN_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$EMUTRAIN_LAUNCHER} >/dev/null
  cmake --build build-asan -j"$jobs"
  stamp "ASan+UBSan: ctest (every test but those labelled sanitize_repeat, every fuzz target's corpus run)"
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE sanitize_repeat
  stamp "ASan+UBSan: passed"
}

run_tsan() {
  stamp "TSan: configure and build the tsan-labelled tests (build-tsan)"
  cmake -S . -B build-tsan -G Ninja "${clang[@]}" -DEMUTRAIN_SANITIZE=thread \
    ${EMUTRAIN_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$EMUTRAIN_LAUNCHER} >/dev/null
  mapfile -t targets < <(ctest --test-dir build-tsan -N -L tsan | sed -n 's/^ *Test *#[0-9]*: //p')
  [ "${#targets[@]}" -gt 0 ] || { echo "sanitize_check: no test labelled tsan" >&2; exit 1; }
  cmake --build build-tsan -j"$jobs" --target "${targets[@]}"
  stamp "TSan: ctest -L tsan (${targets[*]})"
  ctest --test-dir build-tsan --output-on-failure -j"$jobs" -L tsan
  stamp "TSan: passed"
}

modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(asan tsan)
for m in "${modes[@]}"; do
  case "$m" in
    asan) run_asan ;;
    tsan) run_tsan ;;
    *) echo "sanitize_check: unknown mode '$m' (asan or tsan)" >&2; exit 2 ;;
  esac
done
