#!/usr/bin/env bash
# The long tier of the tests (README.md, "Tests"), which CI runs after the
# README's test command and a person runs before a change that touches kernels,
# the trainer or memory handling:
#   1. ctest -L long in the README's build: the five recipes trained on cuda-host
#      against the CPU step by step, validate --device cuda-host under the host
#      executor's reverse and random schedules, the GPU bundle and gpu_check.sh
#      --quick (docs/gpu.md);
#   2. tools/sanitize_check.sh: ASan + UBSan (with every fuzz target's corpus)
#      and TSan builds and their tests (docs/sanitize.md).
# Usage: tools/long_tests.sh [BUILD_DIR]   (default build; it must be built)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/CTestTestfile.cmake" ] || { echo "long_tests: no build in '$build': run the README's test command first" >&2; exit 2; }
echo "long_tests: $(date +%H:%M:%S) ctest -L long ($build)"
ctest --test-dir "$build" --output-on-failure -j"${EMUTRAIN_JOBS:-2}" -L long
echo "long_tests: $(date +%H:%M:%S) sanitizers"
tools/sanitize_check.sh
echo "long_tests: $(date +%H:%M:%S) passed"
