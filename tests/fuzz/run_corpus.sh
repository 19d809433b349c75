#!/usr/bin/env bash
# Runs one libFuzzer target from its seed corpus (docs/sanitize.md):
#   run_corpus.sh FUZZER CORPUS WORK SECONDS [DICT]
# Every corpus input runs first (the regression cases); then the fuzzer mutates
# for SECONDS, writing what it finds into WORK (emptied first), never into
# CORPUS. Fails on any crash, hang (an input over 10 s), leak, sanitizer report
# or failed check, after saving the input as WORK/../<name>-crash-*.
set -euo pipefail
bin=$1 corpus=$2 work=$3 seconds=$4 dict=${5:-}
[ -d "$corpus" ] || { echo "run_corpus: no corpus folder $corpus" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
args=(-seed=1 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
      -artifact_prefix="$work/../$(basename "$work")-")
[ -n "$dict" ] && args+=(-dict="$dict")
exec "$bin" "${args[@]}" "$work" "$corpus"
