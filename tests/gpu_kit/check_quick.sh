#!/usr/bin/env bash
# ctest gpu_check_quick: tools/gpu_check.sh --device cuda-host --quick, run on
# the bundle that the gpu_bundle test made, ends with status 0 and a report in
# which every step passed or says why it was not run (no GPU here), and writes
# at most 8 files with flat names (what the device tool brings back).
#   tests/gpu_kit/check_quick.sh SOURCE_DIR ARCHIVE OUT
set -euo pipefail
src=$1 archive=$2 out=$3
fail() { echo "gpu_check_quick test: FAIL: $*" >&2; exit 1; }
[ -f "$archive" ] || fail "no bundle at $archive (the gpu_bundle test makes it)"
rm -rf "$out"
rc=0
"$src/tools/gpu_check.sh" --bundle "$archive" --out "$out" --device cuda-host --quick || rc=$?
report=$out/gpu_report.md
[ -f "$report" ] || fail "no report"
cat "$report"
[ $rc -eq 0 ] || fail "gpu_check.sh exited $rc"
for step in facts validate memcheck racecheck synccheck bench_gemm bench_train pytorch nccl; do
  row=$(grep -E "^\| $step \|" "$report") || fail "the report has no row for $step"
  echo "$row" | grep -Eq '\| (pass|not run: )' || fail "step $step: $row"
done
for step in facts validate bench_gemm bench_train nccl; do
  grep -Eq "^\| $step \| pass" "$report" || fail "step $step did not pass on cuda-host"
done
grep -Eq "cells: [0-9]+ pass, 0 FAIL" "$out/validate.log" || fail "validate.log has no passing summary"
grep -q "comm-check: pass" "$out/nccl.log" || fail "comm-check did not pass"
files=$(find "$out" -type f | wc -l)
[ "$files" -le 8 ] || fail "$files files in the report folder (the device tool brings back 8)"
[ -z "$(find "$out" -mindepth 2)" ] || fail "the report folder has subfolders"
echo "gpu_check_quick test: pass"
