#!/usr/bin/env bash
# A fuzzing campaign (docs/sanitize.md): each target fuzzed until it has used
# CPU_SECONDS of CPU time (user + system, counted from /proc, so a shared or
# busy machine still gives each target its full share), starting from its seed
# corpus and keeping what it finds in WORK/<target>/corpus.
#   tests/fuzz/campaign.sh BUILD WORK CPU_SECONDS TARGET...
# Prints one line per target: target, CPU seconds, executions, corpus size,
# and the crash file if it stopped on a finding; the logs stay in WORK.
set -euo pipefail
build=$1 work=$2 cpu_seconds=$3
shift 3
here="$(cd "$(dirname "$0")" && pwd)"
ticks=$(getconf CLK_TCK)
printf '%-14s %8s %12s %8s  %s\n' target cpu_s execs corpus finding
for t in "$@"; do
  mkdir -p "$work/$t/corpus"
  args=(-timeout=60 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/$t/")
  [ -f "$here/dict/$t.dict" ] && args+=(-dict="$here/dict/$t.dict")
  "$build/tests/fuzz_$t" "${args[@]}" "$work/$t/corpus" "$here/corpus/$t" >"$work/$t/log" 2>&1 &
  pid=$!
  used=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ -r "/proc/$pid/stat" ]; then
      read -r -a st <"/proc/$pid/stat" || true
      used=$(( (${st[13]:-0} + ${st[14]:-0}) / ticks ))
      [ "$used" -ge "$cpu_seconds" ] && { kill -INT "$pid"; break; }
    fi
    sleep 5
  done
  wait "$pid" || true
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t/log" | tail -1)
  crash=$(ls "$work/$t"/crash-* "$work/$t"/leak-* "$work/$t"/timeout-* "$work/$t"/oom-* 2>/dev/null | head -1 || true)
  printf '%-14s %8s %12s %8s  %s\n' "$t" "$used" "${execs:-?}" "$(ls "$work/$t/corpus" | wc -l)" "${crash:--}"
done
